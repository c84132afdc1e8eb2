// Package serve is flow's Mission Control (README.md, "Mission Control"): a small web
// server that shows the runs of one or more repositories and lets
// people act on them — approve or reject a human step, pause, continue,
// run once, clean up, resume and retry — from a browser.
//
// It is a front end like the command line: every read and every change
// goes through the operations layer (runner/ops) or the runner's public
// functions, and the server holds no knowledge of the run directory's
// files. Pages are rendered on the server with html/template and work
// without JavaScript; a small embedded script follows a run live over
// Server-Sent Events. Assets are embedded; there is no build step and
// nothing is loaded from another origin.
//
// # Routes
//
//	GET  /                                   runs of every repository (?status=failed filters)
//	GET  /login?token=SECRET                 sets the login cookie, then redirects to /
//	GET  /static/{file}                      the embedded CSS and JS
//	GET  /r/{run}                            the run's page in the first repository that has it (notifications link here)
//	GET  /runs/{repo}/{run}                  a run: steps, graph, events, actions
//	GET  /runs/{repo}/{run}/events           Server-Sent Events: new events and the step table
//	GET  /runs/{repo}/{run}/logs/{step}      the latest session log of a step (its last 256 KiB)
//	GET  /runs/{repo}/{run}/logs/{step}/tail Server-Sent Events: new bytes of that log
//	POST /runs/{repo}/{run}/approve/{step}   approve, with the step's declared inputs
//	POST /runs/{repo}/{run}/reject/{step}    reject, with a reason
//	POST /runs/{repo}/{run}/control/{verb}   pause, continue, run-once or cleanup
//	POST /runs/{repo}/{run}/resume           start flow resume RUN --repo DIR, detached
//	POST /runs/{repo}/{run}/retry            start flow retry RUN --repo DIR, detached
//
// {repo} is an index into the configured repositories, {run} a run id
// (core.CheckRunID) and {step} a step key (core.ParseStepKey); nothing
// else from a request reaches the file system.
//
// # Security
//
// A server with tokens asks every request for one — an Authorization
// Bearer header or the cookie that /login sets — and answers 401 with
// nothing else otherwise. A server without tokens must listen on a
// loopback address, and then answers only requests whose Host is a
// loopback name, so that a page elsewhere cannot reach it by DNS
// rebinding. Every POST needs a same-origin Origin (or Referer) and the
// CSRF token of the page's form, bound to a per-browser cookie; a
// read-only server refuses every POST. Changes are recorded as made by
// the token's name, or "local" on a server without tokens. Every
// response forbids framing, inline script and style, and sniffing.
//
// What can go wrong: a resume or retry is started as a detached flow
// process whose output is not shown here (the run's page shows what it
// does); a decision that loses a race to another is refused with what
// was decided, by whom and when.
package serve
