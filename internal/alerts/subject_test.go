package alerts_test

import (
	"testing"

	"github.com/fusebox/fusebox/internal/alerts"
)

func TestAMessageSaysWhatItIsAbout(t *testing.T) {
	for subject, want := range map[string]alerts.Subject{
		"orders/Process":                        {About: alerts.AboutCircuit, ID: "orders/Process"},
		alerts.JobSubject("f0c5"):               {About: alerts.AboutJob, ID: "f0c5"},
		alerts.SetAsideSubject("orders", "q-p"): {About: alerts.AboutSetAside, ID: "orders/q-p"},
	} {
		if got := (alerts.Message{Circuit: subject}).Subject(); got != want {
			t.Errorf("%q is about %+v, want %+v", subject, got, want)
		}
	}
}
