package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/circuit"
)

// apiCircuitAction trips or resumes a circuit.
func (s *SwitchPages) apiCircuitAction(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		var body struct {
			Reason string `json:"reason"`
			From   string `json:"from"`
			// A pause: the trip ends on its own at until, or after for.
			For   string `json:"for"`
			Until string `json:"until"`
			// ExpireOK pauses knowing waiting events expire before the
			// pause ends (FUSEBOX_PAUSE_EXPIRY=warn).
			ExpireOK bool `json:"expire_ok"`
		}
		_ = c.Bind(&body) // the reason is optional
		p, _ := principal(c)
		ctx := c.Request().Context()
		var err error
		if action == "trip" {
			_, err = s.tripOrPause(c, p.Name, body.Reason, strings.TrimSpace(body.For), strings.TrimSpace(body.Until), body.ExpireOK)
		} else {
			var ci circuit.Circuit
			if ci, err = s.circuitOf(c); err != nil {
				return err
			}
			_, _, err = s.resumeAs(ctx, body.From, ci, p.Name, body.Reason, nil)
		}
		var v circuit.ValidationError
		if errors.As(err, &v) && action == "trip" {
			return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "not paused", "fields": fieldProblems(err)})
		}
		if err != nil {
			return apiError(c, err)
		}
		ci, err := s.circuitOf(c)
		if err != nil {
			return err
		}
		return s.pages.circuitJSONResponse(c, http.StatusOK, ci)
	}
}
