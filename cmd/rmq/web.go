package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rmq-go/rmq/rmqweb"
)

// webShutdownGrace is how long "rmq web" lets requests in hand finish after
// Ctrl-C.
const webShutdownGrace = 5 * time.Second

// setupWeb defines "rmq web".
func setupWeb(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	listen := fs.String("listen", "127.0.0.1:8080", "serve on `ADDR`; loopback by default, \":8080\" listens on every interface")
	allowWrite := fs.Bool("allow-write", false, "enable requeue, purge, delete, cancel, pause and resume (POST forms with CSRF tokens); on a non-loopback address only with -token")
	token := fs.String("token", "", "require the bearer `TOKEN` on every request (header, or the login form's cookie); default $RMQ_WEB_TOKEN")
	title := fs.String("title", "RMQ", "the pages' `TITLE`")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		tok := *token
		if tok == "" {
			tok = os.Getenv("RMQ_WEB_TOKEN")
		}
		loopback, err := isLoopback(*listen)
		if err != nil {
			return usagef("-listen %q: %v", *listen, err)
		}
		if *allowWrite && !loopback && tok == "" {
			return usagef("-allow-write on the non-loopback address %s needs -token", *listen)
		}
		c, done, err := af.connect(ctx)
		if err != nil {
			return err
		}
		defer done()
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return err
		}
		h := rmqweb.Handler(c, rmqweb.Options{Title: *title, AllowWrite: *allowWrite, BearerToken: tok,
			Logger: slog.New(slog.NewTextHandler(e.stderr, nil))})
		mode := "read-only"
		if *allowWrite {
			mode = "read-write"
		}
		if tok != "" {
			mode += ", token required"
		}
		e.out.printf("serving the dashboard of namespace %s at http://%s/ (%s); Ctrl-C stops\n", c.Namespace(), ln.Addr(), mode)
		if !loopback && tok == "" {
			fmt.Fprintf(e.stderr, "rmq web: warning: %s is reachable from other hosts and needs no token\n", ln.Addr())
		}
		return serve(ctx, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln)
	}
}

// serve runs srv on ln until ctx ends, then shuts it down gracefully.
func serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), webShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// isLoopback reports whether the listen address addr binds loopback only.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
