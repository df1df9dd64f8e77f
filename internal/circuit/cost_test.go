package circuit

import (
	"strings"
	"testing"
)

func TestSwitchCostSaysWhatRestarts(t *testing.T) {
	arm := App{Switch: SwitchARM, Hosting: Hosting{Plan: PlanAppService}}
	for _, tc := range []struct {
		app    App
		others []string
		want   []string
	}{
		{arm, []string{"Sync", "Process", "Api"}, []string{"restarts the app", "Api, Sync restart with it", "at least once"}},
		{arm, nil, []string{"every other function of the app restarts with it"}},
		{arm, []string{"Process"}, []string{"the app has no other function"}},
		{arm, []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"}, []string{"A, B, C, D, E, F, G, H and 2 more restart with it"}},
		{App{Switch: SwitchLocal}, nil, []string{"local.settings.json", "Functions host restarts"}},
		{App{Switch: SwitchContainerApp}, nil, []string{"new revision"}},
		{App{Switch: SwitchARM, Hosting: Hosting{Plan: PlanFlex, RollingUpdates: true}}, nil, []string{"rolling updates", "keeps running"}},
		{App{Switch: SwitchARM, Hosting: Hosting{Plan: PlanFlex}}, nil, []string{"restarts the app"}},
	} {
		got := tc.app.SwitchCost("Process", tc.others)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v %v: %q lacks %q", tc.app.Hosting, tc.others, got, w)
			}
		}
	}
}
