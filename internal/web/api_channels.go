package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/circuit"
)

func toChannelJSON(ch alerts.Channel) apiwire.Channel {
	return apiwire.Channel{ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Addresses: ch.Addresses, URL: ch.MaskedURL(), CreatedAt: ch.CreatedAt, Team: ch.Team}
}

// apiChannelList lists the channels.
func (s *NotifyPages) apiChannelList(c echo.Context) error {
	chs, err := s.Channels.ListChannels(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]apiwire.Channel, 0, len(chs))
	for _, ch := range scopeOf(c).Channels(chs) {
		out = append(out, toChannelJSON(ch))
	}
	return c.JSON(http.StatusOK, map[string]any{"channels": out})
}

// apiChannelSave creates (POST) or changes (PUT /:id) a channel.
func (s *NotifyPages) apiChannelSave(c echo.Context) error {
	var in apiwire.ChannelInput
	if err := c.Bind(&in); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `The body must be JSON such as {"id": "oncall", "name": "On call", "kind": "teams", "url": "https://…"}.`)
	}
	var cur *alerts.Channel
	status := http.StatusCreated
	if c.Request().Method == http.MethodPut {
		ch, err := s.channel(c)
		if err != nil {
			return err
		}
		cur, status = &ch, http.StatusOK
		in.ID, in.Kind = ch.ID, ch.Kind
	}
	ch, secret, err := s.saveChannel(c, cur, in)
	var ve circuit.ValidationError
	if errors.As(err, &ve) {
		fields := map[string]string{}
		for _, f := range ve {
			fields[f.Field] = f.Message
		}
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": "the channel is not valid", "fields": fields})
	}
	if err != nil {
		return err
	}
	out := toChannelJSON(ch)
	out.Secret = secret
	return c.JSON(status, out)
}

// apiChannelDelete removes a channel.
func (s *NotifyPages) apiChannelDelete(c echo.Context) error {
	ch, err := s.channel(c)
	if err != nil {
		return err
	}
	if err := s.Channels.Delete(c.Request().Context(), ch.ID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiChannelTest sends a test message now.
func (s *NotifyPages) apiChannelTest(c echo.Context) error {
	ch, err := s.channel(c)
	if err != nil {
		return err
	}
	if err := s.TestChannel(c.Request().Context(), ch); err != nil {
		return c.JSON(http.StatusBadGateway, map[string]any{"delivered": false, "error": err.Error()})
	}
	return c.JSON(http.StatusOK, map[string]any{"delivered": true})
}
