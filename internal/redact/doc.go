// Package redact replaces known secret values with "***" in text,
// JSON and streams of output.
//
// A Redactor is built from the values to hide. It matches them byte for
// byte — as written, and as they appear inside a JSON string (with
// quotes, backslashes and control characters escaped, and Go's
// escaping of <, > and &), so that a secret inside an encoded event is
// hidden too. Values shorter than MinLen bytes are not matched: hiding
// every "ab" in a log would destroy it and hide nothing worth hiding.
//
// Writer wraps an io.Writer for output that arrives in pieces: a
// secret split across two writes is still hidden, because the writer
// holds back at most the length of the longest value less one byte until it
// knows they do not start a secret, and releases them on Close.
package redact
