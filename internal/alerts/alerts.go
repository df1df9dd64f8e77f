// Package alerts sends the e-mails Fusebox owes people: one per opened
// circuit, carrying a signed link that resumes it.
//
// Delivery goes through an outbox in Table Storage. Messages are derived
// from circuits, not queued by whoever changed them: a sweep finds every
// open episode of every circuit and makes sure it has one message per
// recipient, keyed by (circuit, episode, kind, recipient), so a crash
// between a trip and its alert still ends in the alert, and running the
// sweep twice never makes two. A sender claims each message with a
// conditional write before sending, so two instances never send the same
// message. What is not guaranteed: if an instance dies after the SMTP
// server accepted a message but before it recorded that, the message is
// sent again once its claim expires. Mail is at least once, and in
// practice once.
package alerts
