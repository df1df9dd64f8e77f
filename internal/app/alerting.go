package app

import (
	"context"
	"time"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/metrics"
	"github.com/fusebox/fusebox/internal/notify"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/teams"
	"github.com/fusebox/fusebox/internal/wording"
)

// alerting is how people are told: signed links, the words of mail and
// notices, the SMTP server, the channels' test and the outbox's sender.
type alerting struct {
	signer *alerts.Signer
	tester notify.Tester
	sender *alerts.Sender
}

func tellPeople(cfg *config.Config, o Options, st stores, out reach, m *metrics.Metrics) (alerting, error) {
	now := o.Clock.Now
	linkKeys := map[string][]byte{}
	for _, k := range cfg.Mail.LinkKeys {
		linkKeys[k.ID] = []byte(k.Key.Reveal())
	}
	signer, err := alerts.NewSigner(cfg.Mail.LinkKeys[0].ID, linkKeys)
	if err != nil {
		return alerting{}, err
	}
	var smtp *notify.SMTP
	var mail alerts.Mailer
	if cfg.Mail.Host != "" {
		smtp = &notify.SMTP{Host: cfg.Mail.Host, Port: cfg.Mail.Port, Username: cfg.Mail.Username, Password: cfg.Mail.Password.Reveal(), TLS: cfg.Mail.TLS, From: cfg.Mail.From}
		mail = *smtp
	} else {
		o.Logger.Warn("mail is off: set FUSEBOX_SMTP_HOST to mail recipients when circuits open; channels still get alerts")
	}
	reminders := cfg.Mail.MaxReminders
	if reminders == 0 {
		reminders = -1 // the sender reads 0 as "the default"
	}
	store := st.store
	composer := wording.Composer{Signer: signer, BaseURL: cfg.BaseURL, LinkTTL: cfg.Mail.LinkTTL, Now: now, Errors: &errortexts.Cache{Rows: store.Failures.Reader(), Stamps: store.Failures},
		Retention: func(ci circuit.Circuit, app circuit.App) (hostinsight.Retention, bool) {
			if !ci.State.TriggerOff() || ci.Pending() {
				return hostinsight.Retention{}, false
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, _, ok := out.hosts.OffRetention(ctx, app, ci, now(), ci.SwitchedAt())
			return r, ok
		}}
	jobWords := wording.JobComposer{Jobs: store.Jobs, BaseURL: cfg.BaseURL}
	sender := alerts.NewSender(store.Outbox, withTeamChannels(store, now), mail, composer,
		alerts.SenderSettings{RemindEvery: cfg.Mail.RemindEvery, MaxReminders: reminders, Clock: o.Clock, Logger: o.Logger,
			Jobs: jobWords, SetAside: wording.SetAsideComposer{Kept: store.SetAside, BaseURL: cfg.BaseURL, Now: now},
			Downstreams: wording.DownstreamComposer{Downstreams: store.Downstreams, Circuits: store.Circuits, BaseURL: cfg.BaseURL, Now: now},
			Channels:    store.Channels, Poster: out.poster, Notices: noticeComposer{composer, jobWords},
			Health: store.Status.DeliveryOf(st.locker.Identity()), Observe: m.ObserveNotification})
	return alerting{
		signer: signer, sender: sender,
		tester: notify.Tester{Mail: smtp, Poster: out.poster, FuseboxURL: cfg.BaseURL.String(), Now: now},
	}, nil
}

// noticeComposer writes notices about circuits and jobs for channels.
type noticeComposer struct {
	circuits wording.Composer
	jobs     wording.JobComposer
}

func (n noticeComposer) Notice(m alerts.Message, c circuit.Circuit, app circuit.App) (alerts.Notice, error) {
	return n.circuits.Notice(m, c, app)
}

func (n noticeComposer) JobNotice(ctx context.Context, m alerts.Message) (alerts.Notice, error) {
	return n.jobs.JobNotice(ctx, m)
}

// withTeamChannels is the store's lists for what notifies: apps with
// their team's default channels.
func withTeamChannels(store *storage.Store, now func() time.Time) teamDefaults {
	return teamDefaults{Lists: storage.Lists{Store: store}, teams: &teams.Directory{List: store.Teams.List, Now: now}}
}

// teamDefaults lists apps as the sender needs them: an app that names no
// channel notifies its team's default channels. The teams are read at
// most every teams.TTL; when they cannot be read, apps go as they are.
type teamDefaults struct {
	storage.Lists
	teams *teams.Directory
}

func (t teamDefaults) ListApps(ctx context.Context) ([]circuit.App, error) {
	apps, err := t.Lists.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	ts, err := t.teams.All(ctx)
	if err != nil {
		return apps, nil
	}
	return teams.DefaultChannels(apps, ts), nil
}
