package web

import (
	"context"
	"fmt"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/forecast"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/spoken"
)

// maxForecastSamples bounds what a forecast reads: two hours of samples
// every 10 s.
const maxForecastSamples = 720

// forecastOf forecasts a pause of length of ci, from its checkpoint
// history when it is an Event Hubs function whose history is kept; ok is
// false when there is nothing to say (not an Event Hubs function, nor a
// retention known). A history that cannot be read within 2 s forecasts
// without it.
func (s *HostPanels) forecastOf(ctx context.Context, ci circuit.Circuit, length time.Duration) (forecast.Forecast, bool) {
	return forecastPause(ctx, s.History, s.Now(), ci, length)
}

// forecastPause is forecastOf from history (nil: none) at now.
func forecastPause(ctx context.Context, history replay.History, now time.Time, ci circuit.Circuit, length time.Duration) (forecast.Forecast, bool) {
	if ci.EventHub == "" && ci.HubRetention == 0 {
		return forecast.Forecast{}, false
	}
	var samples []replay.Sample
	if history != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		samples, _ = history.After(ctx, ci.AppID, ci.Function, now.Add(-forecast.History), now.Add(time.Second), maxForecastSamples)
	}
	return forecast.Of(samples, now, length, ci.HubRetention), true
}

// expiryRefusal says why a pause of ci that would lose events is refused,
// or "" when it may go ahead: with FUSEBOX_PAUSE_EXPIRY=warn, once the
// operator said "pause anyway".
func (s *HostPanels) expiryRefusal(f forecast.Forecast, expireOK bool) string {
	if !f.Expires {
		return ""
	}
	if s.Config.PauseExpiry == "refuse" {
		return fmt.Sprintf("the hub keeps events %s: events waiting when the pause begins would be gone before it ends; pause for less, or trip without a time", spoken.Duration(f.Keep))
	}
	if expireOK {
		return ""
	}
	return fmt.Sprintf("the hub keeps events %s: events waiting when the pause begins would be gone before it ends. Pause for less, or say \"pause anyway\" (expire_ok) to pause knowing they will be lost", spoken.Duration(f.Keep))
}

// nextPause says, for the circuit's page, its next pause window's opening
// and what it does to the events.
func (s *HostPanels) nextPause(ctx context.Context, ci circuit.Circuit) (when, words string, expires bool) {
	p, start, end, ok := circuit.NextPause(ci, s.Now())
	if !ok {
		return "", "", false
	}
	when = fmt.Sprintf("%s to %s (%s)", start.UTC().Format("Mon 2 Jan 15:04"), end.UTC().Format("15:04 MST"), p)
	if f, ok := s.forecastOf(ctx, ci, p.Duration); ok {
		return when, f.Words(), f.Expires
	}
	return when, "", false
}
