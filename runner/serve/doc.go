// Package serve is flow's Mission Control (docs/mission-control.md): a
// web server that shows the runs of one or more repositories, and of
// other engines' servers (Temporal), live, and lets people act on them
// — approve or reject a human step, pause, continue, run once, clean
// up, cancel, resume and retry, start a run — from a browser, and
// scripts through a JSON API.
//
// It is a front end like the command line: every operation on a run
// goes through the run's engine (ops.Engine: the local one for a
// repository's runs, another for a Temporal server's), and what the
// engine does not carry — a local run's events, its session logs, its
// workflow — is read through the operations layer and the record
// package. Pages are rendered on the server with html/template and
// work without JavaScript. A run's page is made of parts (its badge,
// facts, question, actions, timeline and graph, view.go) that a shared
// watcher per run renders again as the run changes and sends over
// Server-Sent Events; a small embedded script puts them in place, and
// patches the step table from rows sent as JSON. The list of runs is
// live the same way (listwatch.go). Assets are embedded; there is no
// build step and nothing is loaded from another origin.
//
// # Routes
//
//	GET  /                                   runs of every source (?status=failed filters)
//	GET  /live                               Server-Sent Events: the list, rendered, when it changes
//	GET  /login?token=SECRET | ?code=CODE    sets the login cookie, then redirects to /
//	POST /login/revoke                       the login code signs no more browsers in
//	GET  /static/{file}                      the embedded CSS and JS
//	GET  /r/{run}                            the run's page in the first source that has it (notifications link here)
//	GET  /start                              the workflows runs start from
//	GET  /start/{repo}?workflow=FILE         a workflow's form: its vars, where to start
//	POST /start/{repo}                       check, then start flow run detached; open the run's page
//	GET  /runs/{repo}/{run}                  a run: its question, facts, actions, steps, timeline, graph
//	GET  /runs/{repo}/{run}/events           Server-Sent Events: new events, the step table, the page's parts
//	GET  /runs/{repo}/{run}/events.json      the run's events as JSON
//	GET  /runs/{repo}/{run}/raw              the newest events on a page
//	GET  /runs/{repo}/{run}/logs/{step}      a session log of a step (?log=NAME; the latest's by default)
//	GET  /runs/{repo}/{run}/logs/{step}/tail Server-Sent Events: new bytes of the latest log, then how it ended
//	GET  /runs/{repo}/{run}/logs/{step}/raw  a whole session log, as text
//	POST /runs/{repo}/{run}/approve/{step}   approve, with the step's declared inputs
//	POST /runs/{repo}/{run}/reject/{step}    reject, with a reason
//	POST /runs/{repo}/{run}/control/{verb}   pause, continue, run-once or cleanup
//	POST /runs/{repo}/{run}/cancel           stop the run's sessions (flow cancel)
//	POST /runs/{repo}/{run}/resume           start flow resume RUN --repo DIR, detached
//	POST /runs/{repo}/{run}/retry            start flow retry RUN --repo DIR, detached
//	     /api/...                            the JSON API (api.go)
//
// {repo} is an index into the server's sources (its repositories, then
// its other engines), {run} a run id (record.CheckRunID) and {step} a
// step key (core.ParseStepKey); a workflow file is one the start page
// offers. Nothing else from a request reaches the file system.
//
// # Security
//
// A server with tokens asks every request but for /login and the
// static assets for one — an Authorization Bearer header or the cookie
// that /login sets — and answers 401 with how to log in otherwise. A
// server without tokens must listen on a loopback address, and then
// answers only requests whose Host is a loopback name, so that a page
// elsewhere cannot reach it by DNS rebinding. Every POST of a page needs
// a same-origin Origin (or Referer) and the CSRF token of the page's
// form, bound to a per-browser cookie; a POST under /api/ needs a token
// as a Bearer header and never takes the cookie; a read-only server
// refuses every POST. Changes are recorded as made by the token's name,
// or "local" on a server without tokens. Every response forbids
// framing, inline script and style, and sniffing.
//
// What can go wrong: a run, resume, retry or start is a detached flow
// process whose output is not shown here (the run's page shows what it
// does; a start whose record does not appear in 15 s says so); a
// decision that loses a race to another is refused with what was
// decided, by whom and when; a human.message that reads a step's
// output is shown as the workflow writes it (the runner keeps outputs
// in memory); a run of another engine has no events here, and its
// timeline is drawn from its state.
package serve
