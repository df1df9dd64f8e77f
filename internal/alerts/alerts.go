// Package alerts delivers what Fusebox owes people about circuits and
// jobs — opened, reminder, resumed, held, flapping, job missing, failing
// or recovered — to mail addresses and channels (mail lists, Microsoft
// Teams, Slack, signed webhooks).
//
// Delivery goes through one outbox in Table Storage. Messages are derived
// from circuits, not queued by whoever changed them: a sweep finds every
// open episode of every circuit and makes sure it has one message per
// destination, keyed by (subject, episode, kind, destination), so a crash
// between a trip and its alert still ends in the alert, and running the
// sweep twice never makes two. A sender claims each message with a
// conditional write before sending, so two instances never send the same
// message. A destination that fails is backed off as a whole (honouring a
// receiver's Retry-After) and shown on the overview; only a refusal that
// retrying cannot change fails a message for good.
//
// What is not guaranteed: if an instance dies after a receiver accepted a
// message but before it recorded that, the message is sent again once its
// claim expires (webhook receivers see the same webhook-id and can drop
// it). Delivery is at least once, and in practice once.
package alerts
