package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/fusebox/fusebox/internal/access"
	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apiwire"
	"github.com/fusebox/fusebox/internal/audit"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/views"
)

// channelNew shows the form for a new channel.
func (s *NotifyPages) channelNew(c echo.Context) error {
	tc, err := s.teamChoice(c, "", "shared between teams")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ChannelFormPage(views.ChannelForm{Page: s.page(c, "New channel", "channels"), Kind: alerts.ChannelTeams, Team: tc}))
}

// channelEdit shows a channel's form; its URL is never put in it.
func (s *NotifyPages) channelEdit(c echo.Context) error {
	ch, err := s.channel(c)
	if err != nil {
		return err
	}
	tc, err := s.teamChoice(c, ch.Team, "shared between teams")
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ChannelFormPage(views.ChannelForm{Page: s.page(c, "Edit "+ch.ID, "channels"), Editing: true, Team: tc,
		ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Addresses: strings.Join(ch.Addresses, ", "), MaskedURL: ch.MaskedURL()}))
}

func (s *NotifyPages) channel(c echo.Context) (alerts.Channel, error) {
	ch, err := s.Channels.Get(c.Request().Context(), c.Param("id"))
	if errors.Is(err, alerts.ErrNoChannel) {
		return ch, echo.NewHTTPError(http.StatusNotFound, "There is no such channel.")
	}
	return ch, err
}

func channelFromForm(c echo.Context) apiwire.ChannelInput {
	v := func(k string) string { return strings.TrimSpace(c.FormValue(k)) }
	in := apiwire.ChannelInput{ID: v("id"), Name: v("name"), Kind: v("kind"), URL: v("url"), Key: v("key"), Rotate: c.FormValue("rotate") == "on", Team: v("team")}
	for _, a := range strings.Split(v("addresses"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			in.Addresses = append(in.Addresses, a)
		}
	}
	return in
}

// saveChannel creates (cur nil) or changes a channel and records it.
// It returns the channel and, when it made one, the new signing secret.
func (s *NotifyPages) saveChannel(c echo.Context, cur *alerts.Channel, in apiwire.ChannelInput) (alerts.Channel, string, error) {
	ctx := c.Request().Context()
	now := s.Now()
	var ch alerts.Channel
	secret := ""
	team := in.Team
	switch {
	case teamNamed(c, team):
	case cur != nil:
		team = cur.Team // an edit that names no team keeps it
	default:
		team = scopeOf(c).DefaultTeam()
	}
	if cur == nil || team != cur.Team {
		problem, err := s.placeIn(c, team)
		if err != nil {
			return alerts.Channel{}, "", err
		}
		if problem == "" && cur != nil && access.NameProblem(team, cur.ID) != "" {
			// A name that names its team stays that team's: moved, it
			// would read as the old team's and block its name there.
			problem = "the channel's id names another team, so it cannot move: make a channel anew in the team"
		}
		if problem != "" {
			return alerts.Channel{}, "", circuit.ValidationError{{Field: "team", Message: problem}}
		}
	}
	if cur == nil {
		if problem := access.NameProblem(team, in.ID); problem != "" {
			return alerts.Channel{}, "", circuit.ValidationError{{Field: "id", Message: problem}}
		}
		ch = alerts.Channel{ID: scopeOf(c).Name(team, in.ID), Kind: in.Kind, CreatedAt: now}
		if in.Kind == alerts.ChannelWebhook {
			ch.Secret = alerts.NewWebhookSecret()
			secret = ch.Secret
		}
	} else {
		ch = *cur
		if in.Rotate && ch.Kind == alerts.ChannelWebhook {
			ch = ch.Rotated(now)
			secret = ch.Secret
		}
	}
	ch.Name, ch.Addresses, ch.Team = in.Name, in.Addresses, team
	if in.URL != "" || cur == nil {
		ch.URL = in.URL
	}
	if alerts.OnCall(ch.Kind) && (in.Key != "" || cur == nil) {
		ch.Secret = in.Key
	}
	ch = ch.WithDefaults()
	if err := ch.Validate(s.Config.AllowLoopbackChannels()); err != nil {
		return ch, "", err
	}
	var err error
	if cur == nil {
		err = s.Channels.Create(ctx, ch)
		if errors.Is(err, alerts.ErrChannelExists) {
			return ch, "", circuit.ValidationError{{Field: "id", Message: "a channel with this id exists already"}}
		}
	} else {
		err = s.Channels.Update(ctx, ch)
	}
	if err != nil {
		return ch, "", err
	}
	p, _ := principal(c)
	action := "created channel"
	if cur != nil {
		action = "changed channel"
	}
	detail := ch.Kind + " " + ch.Name // never the URL or the secret
	if secret != "" && cur != nil {
		detail += ": new signing secret"
	}
	actx, cancel := detached(c)
	defer cancel()
	return ch, secret, s.Audit.Append(actx, audit.Entry{At: now, Actor: p.Name, Action: action, Target: "channel:" + ch.ID, Detail: detail})
}

// channelCreate and channelUpdate save the form.
func (s *NotifyPages) channelCreate(c echo.Context) error { return s.channelSubmit(c, nil) }

func (s *NotifyPages) channelUpdate(c echo.Context) error {
	cur, err := s.channel(c)
	if err != nil {
		return err
	}
	return s.channelSubmit(c, &cur)
}

func (s *NotifyPages) channelSubmit(c echo.Context, cur *alerts.Channel) error {
	in := channelFromForm(c)
	if cur != nil {
		in.ID, in.Kind = cur.ID, cur.Kind
	}
	ch, secret, err := s.saveChannel(c, cur, in)
	var ve circuit.ValidationError
	if errors.As(err, &ve) {
		m := views.ChannelForm{Page: s.page(c, "Channel", "channels"), Editing: cur != nil, ID: in.ID, Name: in.Name, Kind: in.Kind,
			Addresses: strings.Join(in.Addresses, ", "), URL: in.URL, Errors: map[string]string{}}
		if m.Team, err = s.teamChoice(c, in.Team, "shared between teams"); err != nil {
			return err
		}
		if cur != nil {
			m.MaskedURL = cur.MaskedURL()
		}
		for _, f := range ve {
			m.Errors[f.Field] = f.Message
		}
		return render(c, http.StatusUnprocessableEntity, views.ChannelFormPage(m))
	}
	if err != nil {
		return err
	}
	m := views.ChannelSaved{Page: s.page(c, "Channel saved", "channels"), ID: ch.ID, Name: ch.Name, Kind: ch.Kind, Secret: secret}
	if secret != "" && ch.OldSecret != "" {
		m.OldUntil = ch.OldUntil.UTC().Format("Mon 2 Jan 15:04 MST")
	}
	return render(c, http.StatusOK, views.ChannelSavedPage(m))
}

// channelDelete removes a channel. Circuits and jobs that still name it
// keep their other destinations; their messages to it fail, saying so.
func (s *NotifyPages) channelDelete(c echo.Context) error {
	ch, err := s.channel(c)
	if err != nil {
		return err
	}
	if err := s.Channels.Delete(c.Request().Context(), ch.ID); err != nil {
		return err
	}
	p, _ := principal(c)
	actx, cancel := detached(c)
	defer cancel()
	if err := s.Audit.Append(actx, audit.Entry{At: s.Now(), Actor: p.Name, Action: "deleted channel", Target: "channel:" + ch.ID, Detail: ch.Kind + " " + ch.Name, Team: ch.Team, Owned: true}); err != nil {
		return err
	}
	s.setFlash(c, "channel-deleted")
	return c.Redirect(http.StatusSeeOther, "/channels")
}

// channelTest sends a test message to a channel now, past the outbox,
// and says how it went.
func (s *NotifyPages) channelTest(c echo.Context) error {
	ch, err := s.channel(c)
	if err != nil {
		return err
	}
	if err := s.TestChannel(c.Request().Context(), ch); err != nil {
		return s.renderChannels(c, http.StatusBadGateway, &views.Flash{Kind: "error", Text: "The test to " + ch.Name + " was not delivered: " + err.Error()})
	}
	return s.renderChannels(c, http.StatusOK, &views.Flash{Kind: "success", Text: "A test message was delivered to " + ch.Name + "."})
}
