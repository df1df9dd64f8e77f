// Package azalerts reads what Azure Monitor's action groups post: alerts
// in the common alert schema. Every payload is bad input until parsed: the
// body is bounded before it is read, only the essentials are decoded, and
// each field is checked and bounded before anything keeps it.
package azalerts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// SchemaID is the common alert schema's id.
const SchemaID = "azureMonitorCommonAlertSchema"

// Limits of what an alert may hold.
const (
	MaxBody        = 256 << 10 // a log search alert's context can be large; its essentials are small
	MaxID          = 512
	MaxRule        = 256
	MaxTargets     = 32
	MaxDescription = 1024
	// An alert is taken only when it fired within MaxAge before it is
	// received, and at most MaxAhead after (clocks differ): it is kept by
	// the month it fired, and those months are what is read and pruned.
	MaxAge   = 31 * 24 * time.Hour
	MaxAhead = 24 * time.Hour
)

// Conditions an alert is in.
const (
	Fired    = "Fired"
	Resolved = "Resolved"
)

// Alert is what Fusebox keeps of one notification: its essentials.
type Alert struct {
	ID     string // alertId: the alert instance, Fired and Resolved alike
	RuleID string // alertRuleID: the rule's ARM id, when the payload has it
	Rule   string // alertRule: the rule's name
	// Ref is what the payload says of its rule besides RuleID (which
	// Azure's published samples do not carry): its name, subscription and,
	// for a metric alert, resource group and type. Read from the payload
	// to match the rule by (Match); not kept.
	Ref       RuleRef
	Severity  string // Sev0 … Sev4
	Signal    string // Metric, Log, Activity Log, …
	Condition string // Fired or Resolved
	Service   string // monitoringService: Platform, Log Analytics, Resource Health, …
	Targets   []string
	Fired     time.Time
	Resolved  time.Time // zero while fired
	// Description is the rule's, cut to MaxDescription bytes.
	Description string
}

// Key is the alert's delivery: its id and condition. An action group that
// sends one again (it retries) sends the same key.
func (a Alert) Key() string {
	sum := sha256.Sum256([]byte(a.ID + "\x00" + a.Condition))
	return hex.EncodeToString(sum[:16])
}

// Error is a payload that is not one Fusebox takes, said in words the
// sender's owner can act on.
type Error struct{ Why string }

func (e Error) Error() string { return "azalerts: " + e.Why }

type payload struct {
	SchemaID string `json:"schemaId"`
	Data     struct {
		Essentials *struct {
			AlertID           string   `json:"alertId"`
			AlertRule         string   `json:"alertRule"`
			AlertRuleID       string   `json:"alertRuleID"`
			Severity          string   `json:"severity"`
			SignalType        string   `json:"signalType"`
			MonitorCondition  string   `json:"monitorCondition"`
			MonitoringService string   `json:"monitoringService"`
			AlertTargetIDs    []string `json:"alertTargetIDs"`
			OriginAlertID     string   `json:"originAlertId"`
			FiredDateTime     string   `json:"firedDateTime"`
			ResolvedDateTime  string   `json:"resolvedDateTime"`
			Description       string   `json:"description"`
		} `json:"essentials"`
	} `json:"data"`
}

// Parse reads one notification. A body past MaxBody, another schema (an
// action group without "Enable the common alert schema"), or essentials
// that are missing or out of bounds are an Error.
func Parse(body []byte) (Alert, error) {
	if len(body) > MaxBody {
		return Alert{}, Error{fmt.Sprintf("the body is %d bytes; at most %d are read", len(body), MaxBody)}
	}
	var p payload
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&p); err != nil {
		return Alert{}, Error{"the body is not JSON"}
	}
	if p.SchemaID != SchemaID {
		return Alert{}, Error{`the body is not in the common alert schema: turn on "Enable the common alert schema" for this webhook in the action group`}
	}
	e := p.Data.Essentials
	if e == nil {
		return Alert{}, Error{"data.essentials is missing"}
	}
	a := Alert{ID: e.AlertID, RuleID: e.AlertRuleID, Rule: e.AlertRule, Severity: e.Severity, Signal: e.SignalType,
		Condition: e.MonitorCondition, Service: e.MonitoringService, Description: cut(e.Description, MaxDescription)}
	switch {
	case !text(a.ID, MaxID):
		return Alert{}, Error{fmt.Sprintf("essentials.alertId must be 1 to %d printable characters", MaxID)}
	case !text(a.Rule, MaxRule):
		return Alert{}, Error{fmt.Sprintf("essentials.alertRule must be 1 to %d printable characters", MaxRule)}
	case a.RuleID != "" && (!text(a.RuleID, MaxID) || !strings.HasPrefix(strings.ToLower(a.RuleID), "/subscriptions/")):
		return Alert{}, Error{"essentials.alertRuleID must be a rule's resource id, /subscriptions/…"}
	case a.Condition != Fired && a.Condition != Resolved:
		return Alert{}, Error{`essentials.monitorCondition must be "Fired" or "Resolved"`}
	case len(e.AlertTargetIDs) > MaxTargets:
		return Alert{}, Error{fmt.Sprintf("essentials.alertTargetIDs names %d resources; at most %d are taken", len(e.AlertTargetIDs), MaxTargets)}
	}
	a.Ref = refOf(a.ID, a.Rule, e.OriginAlertID)
	for _, f := range []*string{&a.Severity, &a.Signal, &a.Service} {
		if !text(*f, MaxRule) {
			*f = "" // shown as not said, never as sent
		}
	}
	for _, t := range e.AlertTargetIDs {
		if !text(t, MaxID) {
			return Alert{}, Error{fmt.Sprintf("essentials.alertTargetIDs holds an entry that is not 1 to %d printable characters", MaxID)}
		}
		a.Targets = append(a.Targets, t)
	}
	var err error
	if a.Fired, err = when(e.FiredDateTime); err != nil || a.Fired.IsZero() {
		return Alert{}, Error{"essentials.firedDateTime must be a time in ISO 8601 (RFC 3339)"}
	}
	if e.ResolvedDateTime != "" {
		if a.Resolved, err = when(e.ResolvedDateTime); err != nil {
			return Alert{}, Error{"essentials.resolvedDateTime must be a time in ISO 8601 (RFC 3339)"}
		}
	}
	if a.Condition == Resolved && a.Resolved.IsZero() {
		return Alert{}, Error{"a Resolved alert must say essentials.resolvedDateTime"}
	}
	return a, nil
}

// text says s is 1 to n bytes of printable UTF-8 on one line.
func text(s string, n int) bool {
	if s == "" || len(s) > n || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// cut keeps at most n bytes of valid UTF-8 of s.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// when reads Azure's times: RFC 3339 with up to seven fractional digits.
func when(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// Received is an alert, when Fusebox took it, and what it did: the rule
// it was matched to, the circuits it tripped, and how it matched or why it
// acted on nothing.
type Received struct {
	Alert
	At      time.Time
	Tripped []string
	Matched string // a rule id; empty: none (or not recorded)
	Note    string
}
