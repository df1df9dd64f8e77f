package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// lockList will list every lease; until leases land there are none.
func (s *Server) lockList(c echo.Context) error {
	return render(c, http.StatusOK, views.LocksPage(views.Locks{Page: s.page(c, "Locks", "locks")}))
}
