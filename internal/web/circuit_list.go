package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// circuitList lists every circuit. The first version of the page: the
// circuit evaluator adds live counts, filters and sparklines.
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
