package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// circuitList, jobList, auditList and lockList are the first versions of
// their pages: plain lists read from storage, grown by later work.

func (s *Server) circuitList(c echo.Context) error {
	apps, err := s.Apps.List(c.Request().Context())
	if err != nil {
		return err
	}
	cs, err := s.Circuits.List(c.Request().Context())
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.CircuitsPage(views.Circuits{Page: s.page(c, "Circuits", "circuits"), Rows: circuitRows(apps, cs)}))
}

func (s *Server) jobList(c echo.Context) error {
	apps, err := s.Apps.List(c.Request().Context())
	if err != nil {
		return err
	}
	js, err := s.Jobs.List(c.Request().Context())
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.JobsPage(views.Jobs{Page: s.page(c, "Jobs", "jobs"), Rows: jobRows(apps, js)}))
}

func (s *Server) auditList(c echo.Context) error {
	es, err := s.Audit.Recent(c.Request().Context(), s.Now(), 200)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AuditPage(views.Audit{Page: s.page(c, "Audit", "audit"), Rows: auditRows(es)}))
}

func (s *Server) lockList(c echo.Context) error {
	return render(c, http.StatusOK, views.LocksPage(views.Locks{Page: s.page(c, "Locks", "locks")}))
}
