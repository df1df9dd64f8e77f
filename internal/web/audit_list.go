package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// auditList shows who did what, newest first.
func (s *OpsPages) auditList(c echo.Context) error {
	// A team sees the entries of its own subjects: more are read for it,
	// so that a busy other team does not empty its page.
	es, err := s.Audit.Recent(c.Request().Context(), s.Now(), scopeOf(c).AuditRead(200))
	if err != nil {
		return err
	}
	if es, err = s.auditEntries(c, es, 200); err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AuditPage(views.Audit{Page: s.page(c, "Audit", "audit"), Rows: auditRows(es)}))
}
