// Package alerts will send the e-mails Fusebox owes people: one per opened
// circuit, carrying a signed resume link, and one when a job goes missing.
// It is empty until the alerting issue lands.
package alerts
