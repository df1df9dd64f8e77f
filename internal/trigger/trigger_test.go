package trigger_test

import (
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/trigger"
)

func TestSettingForms(t *testing.T) {
	if got := trigger.Setting("ProcessOrders"); got != "AzureWebJobs.ProcessOrders.Disabled" {
		t.Errorf("Setting = %q", got)
	}
	if got := trigger.AltSetting("ProcessOrders"); got != "AzureWebJobs_ProcessOrders_Disabled" {
		t.Errorf("AltSetting = %q", got)
	}
	for key, want := range map[string]string{
		"AzureWebJobs.ProcessOrders.Disabled": "ProcessOrders",
		"AzureWebJobs_Import_Prices_Disabled": "Import_Prices",
		"AzureWebJobs..Disabled":              "",
		"AzureWebJobsStorage":                 "",
		"FUNCTIONS_WORKER_RUNTIME":            "",
	} {
		got, ok := trigger.FunctionOf(key)
		if got != want || ok != (want != "") {
			t.Errorf("FunctionOf(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
}

// The host reads the setting as disabled only for "1" or "true", any case.
func TestTruthy(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "TRUE": true, "True": true, "0": false, "false": false, "yes": false, "": false, " true": false} {
		if got := trigger.Truthy(v); got != want {
			t.Errorf("Truthy(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestCheckSettable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		linux bool
		want  string // "" for settable
	}{
		{"ProcessOrders", true, ""},
		{"process-orders", false, ""},
		{"process-orders", true, "Linux plans reject app setting names with '-'"},
		{"9Lives", false, "not a function name"},
		{strings.Repeat("a", 129), false, "not a function name"},
	} {
		err := trigger.CheckSettable(tc.name, tc.linux)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckSettable(%q, linux=%v) = %v, want %q", tc.name, tc.linux, err, tc.want)
		}
	}
}
