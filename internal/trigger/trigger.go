// Package trigger is the one place that knows how the Azure Functions host
// names a function and reads the setting that switches its trigger off:
// AzureWebJobs.<name>.Disabled, or AzureWebJobs_<name>_Disabled where dots
// are not allowed, true when its value is "1" or "true" in any case.
//
// Every switch (ARM app settings, local.settings.json) and every check of a
// function name goes through it, so the rule cannot differ between them.
package trigger

import (
	"fmt"
	"strings"
)

// ValidName reports whether s is a usable function name: a letter, then
// letters, digits, _ or -, at most 128 characters. It runs for every
// reported item, so it is a loop rather than a regular expression.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_' || c == '-')) {
			return false
		}
	}
	return true
}

// MaxNameLength is the longest function name ValidName accepts.
const MaxNameLength = 128

// NameRule says ValidName's rule in words, for error messages.
const NameRule = "a letter, then letters, digits, _ or -, at most 128"

// Setting is the app setting that switches a function's trigger off.
func Setting(function string) string { return "AzureWebJobs." + function + ".Disabled" }

// AltSetting is the same setting in the form without dots, which the host
// also reads (and which environments that reject dots need).
func AltSetting(function string) string { return "AzureWebJobs_" + function + "_Disabled" }

// Truthy is how the host reads the setting's value.
func Truthy(v string) bool { return v == "1" || strings.EqualFold(v, "true") }

// FunctionOf returns the function a setting key switches, if it is one.
func FunctionOf(key string) (string, bool) {
	switch {
	case strings.HasPrefix(key, "AzureWebJobs.") && strings.HasSuffix(key, ".Disabled"):
		f := strings.TrimSuffix(strings.TrimPrefix(key, "AzureWebJobs."), ".Disabled")
		return f, f != ""
	case strings.HasPrefix(key, "AzureWebJobs_") && strings.HasSuffix(key, "_Disabled"):
		f := strings.TrimSuffix(strings.TrimPrefix(key, "AzureWebJobs_"), "_Disabled")
		return f, f != ""
	}
	return "", false
}

// CheckSettable says why a function's setting cannot be written on an app,
// or nil: Linux plans reject app setting names containing '-'.
func CheckSettable(function string, linux bool) error {
	if !ValidName(function) {
		return fmt.Errorf("%q is not a function name (%s)", function, NameRule)
	}
	if linux && strings.Contains(function, "-") {
		return fmt.Errorf("%q contains '-', and Linux plans reject app setting names with '-', so %s cannot be set; rename the function", function, Setting(function))
	}
	return nil
}
