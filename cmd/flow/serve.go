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
	"time"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/serve"
)

func (a *app) serveCmd() *cobra.Command {
	var (
		addr     string
		repos    []string
		tokens   []string
		readOnly bool
		public   string
		notify   bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve Mission Control: runs, steps, graphs, live logs and actions in a browser",
		Long: `serve shows the runs of one or more repositories in a browser: each run's steps,
graph, events and live logs, and forms to approve or reject human steps, pause,
continue, run once, clean up, resume and retry.

It listens on the loopback address by default. On any other address it needs a
token: --token NAME=SECRET (repeatable; NAME is recorded as who acted); without
one it makes one and prints a login link once. --read-only refuses every change.`,
		Example: "  flow serve\n  flow serve --repo ~/src/app --repo ~/src/site\n  flow serve --addr 0.0.0.0:8080 --token alice=$FLOW_TOKEN --read-only",
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
			loopback := serve.IsLoopback(addr)
			login := ""
			if len(toks) == 0 && !loopback {
				secret, err := serve.NewSecret()
				if err != nil {
					return err
				}
				toks = append(toks, serve.Token{Name: "admin", Secret: secret})
				// The link carries a one-time code, not the token.
				if login, err = serve.NewSecret(); err != nil {
					return err
				}
			}
			a.svc.NotifyDead = notify
			exe, err := selfPath()
			if err != nil {
				return fmt.Errorf("find the flow executable: %w", err)
			}
			srv, err := serve.New(serve.Config{Service: a.svc, Repos: repos, Tokens: toks, Loopback: loopback,
				ReadOnly: readOnly, LoginCode: login, Launcher: serve.ExecLauncher{Path: exe, Dir: a.svc.Dir, Env: publicEnv(public)}})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return core.Usage("--addr %s: %v", addr, err)
			}
			url := "http://" + displayAddr(ln.Addr().String(), a.svc.Host) + "/"
			fmt.Fprintf(a.stdio.Out, "flow serve: %s\n", url)
			if login != "" {
				fmt.Fprintf(a.stdio.Out, "log in once with (the link works once): %slogin?code=%s\n", url, login)
			}
			return serveUntil(cmd.Context(), ln, srv)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (host:port)")
	fl.StringArrayVar(&repos, "repo", nil, "repository whose runs are shown (repeatable; default: the current directory)")
	fl.StringArrayVar(&tokens, "token", nil, "accept this token: NAME=SECRET (repeatable); required off loopback")
	fl.BoolVar(&readOnly, "read-only", false, "show runs, refuse every change")
	fl.BoolVar(&notify, "notify-dead", false, "tell a dead run's notifiers (notify.on: [dead]) when a page finds it dead; without it, showing a run never runs anything")
	fl.StringVar(&public, "public-url", "", "the address people reach this server at; runners it starts link their notifications to it (FLOW_PUBLIC_URL)")
	return cmd
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
