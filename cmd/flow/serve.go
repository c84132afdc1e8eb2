package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/serve"
)

func (a *app) serveCmd() *cobra.Command {
	var (
		addr      string
		repos     []string
		workflows []string
		tokens    []string
		readOnly  bool
		public    string
		notify    bool
		resume    bool
		perClient int
		streams   int
	)
	tf := &temporalFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve Mission Control: runs, steps, graphs, live logs and actions in a browser",
		Long: `serve shows the runs of one or more repositories in a browser, live: each run's
question when a step waits, its steps, timeline, graph and logs, and forms to
approve or reject human steps, pause, continue, run once, clean up, cancel,
resume and retry, and to start runs. A JSON API under /api/ serves scripts
(docs/mission-control.md).

It listens on the loopback address by default, and prints a token for the
API's changes (Authorization: Bearer). On any other address it needs a token:
--token NAME=SECRET (repeatable; NAME is recorded as who acted); without one it
makes one and prints a login link, which signs in every browser it is opened
in until the server stops. --read-only refuses every change.

With --temporal-address (or $FLOW_TEMPORAL_ADDRESS) it lists the runs of that
Temporal server beside the repositories' and acts on them (as flow-temporal).`,
		Example: "  flow serve\n  flow serve --repo ~/src/app --repo ~/src/site\n  flow serve --addr 0.0.0.0:8080 --token alice=$FLOW_TOKEN --read-only\n  flow serve --temporal-address localhost:7233",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var toks []serve.Token
			for _, s := range tokens {
				t, err := serve.ParseToken(s)
				if err != nil {
					return err
				}
				toks = append(toks, t)
			}
			if tf.address == "" {
				tf.address = a.svc.Getenv("FLOW_TEMPORAL_ADDRESS")
			}
			var engines []ops.Engine
			var launchEnv []string
			if tf.address != "" {
				h := temporalHooks
				if h == nil {
					return a.execTemporal(cmd.Context())
				}
				tf.resolve(a.svc.Getenv)
				eng, closeFn, err := h.engine(cmd.Context(), a, tf)
				if err != nil {
					return err
				}
				defer closeFn()
				engines = append(engines, eng)
				launchEnv = append(launchEnv, "FLOW_TEMPORAL_ADDRESS="+tf.address, "FLOW_TEMPORAL_NAMESPACE="+tf.namespace,
					"FLOW_TEMPORAL_TASK_QUEUE="+tf.queue)
			}
			loopback := serve.IsLoopback(addr)
			login := ""
			var apiTokens []serve.Token
			switch {
			case len(toks) == 0 && !loopback:
				secret, err := serve.NewSecret()
				if err != nil {
					return err
				}
				toks = append(toks, serve.Token{Name: "admin", Secret: secret})
				// The link carries a login code, not the token.
				if login, err = serve.NewSecret(); err != nil {
					return err
				}
			case len(toks) == 0:
				// Scripts change runs through /api/ with a token, never a
				// browser's cookie.
				secret, err := serve.NewSecret()
				if err != nil {
					return err
				}
				apiTokens = append(apiTokens, serve.Token{Name: "api", Secret: secret})
			}
			a.svc.NotifyDead = notify
			exe, err := selfPath()
			if err != nil {
				return fmt.Errorf("find the flow executable: %w", err)
			}
			if perClient < 1 || streams < 1 {
				return ops.Usage("--client-streams %d, --streams %d: want positive numbers of streams", perClient, streams)
			}
			var files []string
			for _, f := range workflows {
				abs, err := filepath.Abs(f)
				if err != nil {
					return ops.Usage("--workflow %s: %v", f, err)
				}
				files = append(files, abs)
			}
			srv, err := serve.New(serve.Config{Service: a.svc, Engine: a.engine(), Engines: engines, Repos: repos, Workflows: files,
				Tokens: toks, APITokens: apiTokens, Loopback: loopback, ReadOnly: readOnly, LoginCode: login, ResumeOnDecision: resume,
				ClientStreams: perClient, Streams: streams,
				Launcher: serve.ExecLauncher{Path: exe, Dir: a.svc.Dir, Env: append(publicEnv(public), launchEnv...)}})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return ops.Usage("--addr %s: %v", addr, err)
			}
			url := baseURL(addr, ln.Addr().String(), public, a.svc.Host)
			fmt.Fprintf(a.stdio.Out, "flow serve: %s\n", url)
			if login != "" {
				fmt.Fprintf(a.stdio.Out, "log in with (it signs in every browser you open it in, until the server stops): %slogin?code=%s\n", url, login)
			}
			if len(apiTokens) > 0 && !readOnly {
				fmt.Fprintf(a.stdio.Out, "API token for changes under %sapi/ (Authorization: Bearer): %s\n", url, apiTokens[0].Secret)
			}
			for _, e := range engines {
				fmt.Fprintf(a.stdio.Out, "runs on %s: %s\n", e.Name(), tf.address)
			}
			return serveUntil(cmd.Context(), ln, srv)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (host:port)")
	fl.StringArrayVar(&repos, "repo", nil, "repository whose runs are shown (repeatable) "+repoDefault)
	fl.StringArrayVar(&workflows, "workflow", nil, "workflow file the start page offers, besides each repository's workflows/ directory (repeatable)")
	fl.StringArrayVar(&tokens, "token", nil, "accept this token: NAME=SECRET (repeatable); required off loopback")
	fl.BoolVar(&readOnly, "read-only", false, "show runs, refuse every change")
	fl.BoolVar(&notify, "notify-dead", false, "tell a dead run's notifiers (notify.on: [dead]) when a page finds it dead; without it, showing a run never runs anything")
	fl.BoolVar(&resume, "resume-on-decision", false, "resume a run that no runner holds as soon as a decision on it is made from a page")
	fl.IntVar(&perClient, "client-streams", serve.DefaultClientStreams, "live streams one client (a token; everyone, on a server without tokens) may hold open; more get 429")
	fl.IntVar(&streams, "streams", serve.DefaultStreams, "live streams the server holds open in all; more get 429")
	fl.StringVar(&public, "public-url", "", "the address people reach this server at: the login link uses it, and runners it starts link their notifications to it (FLOW_PUBLIC_URL)")
	fl.StringVar(&tf.address, "temporal-address", "", "also list and act on the runs of this Temporal server, HOST:PORT (default: $FLOW_TEMPORAL_ADDRESS)")
	fl.StringVar(&tf.namespace, "temporal-namespace", "", "the Temporal namespace (default: $FLOW_TEMPORAL_NAMESPACE, else default)")
	fl.StringVar(&tf.queue, "temporal-task-queue", "", "the task queue of flow's workers (default: $FLOW_TEMPORAL_TASK_QUEUE, else flow)")
	return cmd
}

// baseURL is the address of the server's pages, as the links it
// prints give it: --public-url when given, else the address it was
// asked to listen on (with the port it got), an unspecified host
// replaced by this machine's name.
func baseURL(asked, got, public, hostname string) string {
	if public != "" {
		return strings.TrimRight(public, "/") + "/"
	}
	host, _, err := net.SplitHostPort(asked)
	_, port, err2 := net.SplitHostPort(got)
	if err != nil || err2 != nil {
		return "http://" + displayAddr(got, hostname) + "/"
	}
	if host == "" {
		return "http://" + displayAddr(got, hostname) + "/"
	}
	return "http://" + displayAddr(net.JoinHostPort(host, port), hostname) + "/"
}

// displayAddr is a listening address as a browser elsewhere reaches it:
// an unspecified host (all interfaces) is replaced by this machine's
// name.
func displayAddr(addr, hostname string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || hostname == "" {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort(hostname, port)
	}
	return addr
}

// serveUntil serves h on ln until ctx ends, then shuts down, giving open
// requests a few seconds.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	// Requests' contexts end with ctx, so that live streams end too.
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// selfPath is the flow executable that resume and retry start: the
// command as it was called (found on PATH when it has no slash), else
// the running executable.
func selfPath() (string, error) {
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	return os.Executable()
}

// publicEnv is the environment that tells a runner where this server's
// pages are, for the links of its notifications.
func publicEnv(public string) []string {
	if public == "" {
		return nil
	}
	return []string{"FLOW_PUBLIC_URL=" + public}
}
