package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// jobList lists every job with its status, last run, next expected slot
// and how many of the last week's slots succeeded.
func (s *Server) jobList(c echo.Context) error {
	apps, err := s.Apps.List(c.Request().Context())
	if err != nil {
		return err
	}
	js, err := s.Jobs.List(c.Request().Context())
	if err != nil {
		return err
	}
	weeks, err := s.jobWeeks(c, js)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.JobsPage(views.Jobs{Page: s.page(c, "Jobs", "jobs"), Rows: jobRows(apps, js, weeks), CanCreate: canAct(c)}))
}
