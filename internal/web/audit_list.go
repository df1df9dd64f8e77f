package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// auditList shows who did what, newest first.
func (s *OpsPages) auditList(c echo.Context) error {
	es, err := s.Audit.Recent(c.Request().Context(), s.Now(), 200)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AuditPage(views.Audit{Page: s.page(c, "Audit", "audit"), Rows: auditRows(es)}))
}
