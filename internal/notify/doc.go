// Package notify tells people of a run's events without their watching
// it (a workflow's notify:): it runs a command with the notification as
// JSON on its stdin and FLOW_* variables in its environment, and POSTs
// a JSON payload that Slack-compatible incoming webhooks accept.
//
// What can go wrong, and what is done about it:
//
//   - A notifier that hangs: each is bounded by its timeout; a command
//     is killed with its process group when the timeout passes.
//   - A notifier that fails: Send returns an error per notifier, saying
//     which failed and how; the caller records it and goes on. Nothing
//     here fails or holds up a run beyond the timeout.
//   - Secrets: a webhook's URL may hold one ($NAME or ${NAME} in it is
//     read from the environment when sent). No error holds the URL or
//     the values it read; the response's body is not kept.
//   - A hostile or broken endpoint: the response's body is read no
//     further than a few KiB; redirects are not followed.
package notify
