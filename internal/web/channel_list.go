package web

import (
	"cmp"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/views"
)

// channelList shows the channels, their URLs masked.
func (s *NotifyPages) channelList(c echo.Context) error {
	return s.renderChannels(c, http.StatusOK, nil)
}

func (s *NotifyPages) renderChannels(c echo.Context, status int, flash *views.Flash) error {
	ctx := c.Request().Context()
	chs, err := s.Channels.ListChannels(ctx)
	if err != nil {
		return err
	}
	chs = scopeOf(c).Channels(chs)
	users, err := s.channelUsers(c)
	if err != nil {
		return err
	}
	m := views.Channels{Page: s.page(c, "Channels", "channels"), CanAct: scopeOf(c).ActsAnywhere()}
	if flash != nil {
		m.Flash = flash
	}
	for _, ch := range chs {
		where := ch.MaskedURL()
		if ch.Kind == alerts.ChannelMail {
			where = strings.Join(ch.Addresses, ", ")
		}
		m.Rows = append(m.Rows, views.ChannelRow{ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Where: where, Users: users[ch.ID],
			Team: cmp.Or(ch.Team, "shared"), CanEdit: scopeOf(c).ChangesChannel(ch)})
	}
	return render(c, status, views.ChannelsPage(m))
}

// channelUsers counts the circuits, jobs and apps naming each channel,
// of those the principal may see.
func (s *NotifyPages) channelUsers(c echo.Context) (map[string]int, error) {
	ctx := c.Request().Context()
	out := map[string]int{}
	sc := scopeOf(c)
	owners, err := s.owners(c)
	if err != nil {
		return nil, err
	}
	cs, err := s.Circuits.Recent(ctx, listFreshness)
	if err != nil {
		return nil, err
	}
	for _, ci := range sc.Circuits(owners, cs) {
		for _, id := range ci.Channels {
			out[id]++
		}
	}
	js, err := s.Jobs.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, j := range sc.Jobs(owners, js) {
		for _, id := range j.Channels {
			out[id]++
		}
	}
	apps, err := s.Apps.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range sc.Apps(apps) {
		for _, id := range a.Channels {
			out[id]++
		}
	}
	return out, nil
}
