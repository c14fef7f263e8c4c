package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// defaultHTTPListener is http.listener's default, shared by the
// settings table and the healthcheck, which runs without loading them.
const defaultHTTPListener = "127.0.0.1:9644"

// healthcheck is `gokafka healthcheck`: it asks the local broker's
// /readyz and exits 0 if the broker is ready, 1 otherwise, printing why.
// A container's HEALTHCHECK runs it; images built FROM scratch have no
// curl or wget.
//
// The URL is --url if given, else http://<http.listener>/readyz with
// http.listener from GOKAFKA_HTTP_LISTENER (default 127.0.0.1:9644); a
// wildcard host (0.0.0.0, ::) is asked on the loopback address.
func healthcheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "readiness URL (default http://<GOKAFKA_HTTP_LISTENER>/readyz)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" {
		addr, set := os.LookupEnv("GOKAFKA_HTTP_LISTENER")
		if set && addr == "" {
			fmt.Fprintln(stderr, "gokafka healthcheck: GOKAFKA_HTTP_LISTENER is empty: the HTTP listener is off, there is no /readyz to ask")
			return 1
		}
		if addr == "" {
			addr = defaultHTTPListener
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			fmt.Fprintf(stderr, "gokafka healthcheck: GOKAFKA_HTTP_LISTENER %q: %v\n", addr, err)
			return 2
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
			if ip != nil && ip.To4() == nil {
				host = "::1"
			}
		}
		*url = "http://" + net.JoinHostPort(host, port) + "/readyz"
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "gokafka healthcheck: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "gokafka healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "gokafka healthcheck: %s: %s\n%s\n", *url, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(stdout, "ready\n")
	return 0
}
