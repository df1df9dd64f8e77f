package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/views"
)

// handleError is the one place errors become responses: an HTML page for
// browsers, JSON under /api/. Details of unexpected errors go to the log
// (by logRequests), never to the client; the request id links the two.
func (s *core) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, message := http.StatusInternalServerError, "Something went wrong on our side. It has been logged."
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		status = he.Code
		if m, ok := he.Message.(string); ok {
			message = m
		} else {
			message = http.StatusText(status)
		}
		if status == http.StatusNotFound {
			message = "There is no page here."
		}
		if status == http.StatusRequestEntityTooLarge && message == http.StatusText(status) {
			message = "The request body is larger than this server accepts."
		}
	case s.StorageDown(err):
		status, message = http.StatusServiceUnavailable, "Table Storage is not answering. Try again in a moment."
	}
	requestID := c.Response().Header().Get(echo.HeaderXRequestID)
	if status == http.StatusServiceUnavailable {
		// Storage not answering: clients that honour it (the Go client,
		// OTLP exporters) come back after a pause rather than at once.
		c.Response().Header().Set("Retry-After", "5")
	}

	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	if isPing(c) {
		// Pings come from curl in crontabs: always a short plain answer.
		_ = c.String(status, strings.ToLower(http.StatusText(status)))
		return
	}
	if !wantsHTML(c) {
		_ = c.JSON(status, map[string]string{"error": message, "request_id": requestID})
		return
	}
	heading := http.StatusText(status)
	if status == http.StatusUnauthorized {
		heading = "Not signed in"
	}
	m := views.Error{Page: s.page(c, heading, ""), Status: status, Heading: heading, Message: message}
	if status >= 500 {
		m.RequestID = requestID
	}
	if rerr := render(c, status, views.ErrorPage(m)); rerr != nil {
		_ = c.String(status, message)
	}
}
