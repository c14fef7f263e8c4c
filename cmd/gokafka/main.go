// Command gokafka runs a Kafka-compatible broker.
//
//	gokafka [--config config.yaml]
//	gokafka certs --dir DIR [--hosts h1,h2] NAME...
//
// The certs command writes a development CA and certificates signed by it
// for TLS listeners and clients (see README, "TLS").
//
//	gokafka healthcheck [--url http://127.0.0.1:9644/readyz]
//
// With no configuration it serves a single-node cluster on
// 127.0.0.1:9092 with its data in ./data. Settings use Kafka's broker
// property names; each can be overridden by an environment variable
// GOKAFKA_<NAME> with dots as underscores (GOKAFKA_LOG_DIRS=/var/lib/gokafka).
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/gokafka/gokafka/broker"
	"github.com/gokafka/gokafka/console"
	"github.com/gokafka/gokafka/internal/idlemem"
	"github.com/gokafka/gokafka/metrics"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
)

// failLogDirEnv names a log dir to fail on demand (see run).
const failLogDirEnv = "GOKAFKA_TEST_FAIL_LOG_DIR"

func main() {
	os.Exit(run())
}

func run() int {
	if len(os.Args) > 1 && os.Args[1] == "certs" {
		return runCerts(os.Args[2:], os.Stdout, os.Stderr)
	}
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		return healthcheck(os.Args[2:], os.Stdout, os.Stderr)
	}
	configPath := flag.String("config", "", "path to a YAML file of broker properties")
	flag.Parse()

	s, err := loadConfig(*configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gokafka:", err)
		return 2
	}
	logger, err := newLogger(s.str("log.format"), s.str("log.level"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gokafka:", err)
		return 2
	}
	cfg, err := s.brokerConfig()
	if err != nil {
		logger.Error().Err(err).Msg("configuration rejected")
		return 2
	}

	if dir := os.Getenv(failLogDirEnv); dir != "" {
		// Test hook, not a setting: every I/O under dir fails with EIO
		// once the file "<dir>.fail" exists, so tests can take a real
		// process's log dir offline.
		cfg.LogFS = partition.FailingFS(partition.OSFS(), dir, dir+".fail")
		logger.Warn().Str("log_dir", dir).Msg(failLogDirEnv + " is set: the log dir fails once " + dir + ".fail exists")
	}

	// Test-only: integration tests route each node's connections to its
	// peers through fault proxies (see protocol.PeerRoutesEnv).
	if v := os.Getenv(protocol.PeerRoutesEnv); v != "" {
		routes, err := protocol.ParsePeerRoutes(v)
		if err != nil {
			logger.Error().Err(err).Msg("configuration rejected")
			return 2
		}
		cfg.PeerRoutes = routes
		logger.Warn().Int("routes", len(routes)).Msg("peer connections rerouted by " + protocol.PeerRoutesEnv + " (test only)")
	}

	if addr := s.str("debug.pprof.listener"); addr != "" {
		servePprof(addr, logger)
	}

	// The HTTP listener comes up first, so that /livez answers and
	// /readyz says why not ready while the logs recover.
	seriesMax := s.nonNegative("metrics.partition.series.max")
	releaseEvery := ms(s.nonNegative("memory.idle.release.interval.ms"))
	if len(s.errs) > 0 {
		logger.Error().Msg("configuration rejected: " + strings.Join(s.errs, "; "))
		return 2
	}
	m := metrics.New(metrics.Config{PartitionSeriesMax: int(min(seriesMax, math.MaxInt32))})
	cfg.Metrics = m
	var httpL *metrics.HTTP
	if addr := s.str("http.listener"); addr != "" {
		h, err := metrics.Listen(addr, m, logger.With().Str("component", "http").Logger())
		if err != nil {
			logger.Error().Err(err).Str("addr", addr).Msg("cannot bind the HTTP listener (set http.listener to a free host:port, or empty to turn it off)")
			return 1
		}
		httpL = h
		logger.Info().Str("addr", h.Addr()).Msg("http listener serving /metrics, /livez and /readyz, and the console at / once started")
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h.Shutdown(sctx)
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// Returns the heap left free by a burst (a topic's creation) once the
	// process is idle; process-wide, like the runtime it watches.
	idle := idlemem.Start(ctx, idlemem.Config{Interval: releaseEvery}, logger.With().Str("component", "idlemem").Logger())
	defer idle.Stop()

	srv, err := broker.Start(ctx, cfg, logger)
	if err != nil {
		if ctx.Err() != nil {
			// SIGTERM/SIGINT while starting: nothing was served yet and
			// whatever was opened is closed; that is a clean stop.
			logger.Info().Err(err).Msg("stopped during start-up")
			return 0
		}
		logger.Error().Err(err).Msg("start failed")
		return 1
	}
	var con *console.Console
	if httpL != nil && !cfg.Roles.ControllerOnly {
		// The live console, on the HTTP listener once there is a broker
		// to show (a controller-only node has none); closed before the
		// broker stops.
		con = console.New(srv.ConsoleSource(), console.Options{Logger: logger.With().Str("component", "console").Logger()})
		httpL.Handle("GET /", con)
	}
	logger.Info().Int32("node_id", cfg.NodeID).Strs("listeners", srv.Addrs()).
		Str("log_dirs", strings.Join(cfg.LogDirs, ",")).Str("cluster_id", srv.ClusterID()).
		Msg("gokafka started")

	code := 0
	select {
	case <-ctx.Done():
		logger.Info().Msg("shutting down")
	case err := <-srv.Err():
		logger.Error().Err(err).Msg("fatal error; shutting down")
		code = 1
	}
	stop()
	if con != nil {
		con.Close()
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		logger.Error().Err(err).Msg("shutdown incomplete")
		return 1
	}
	logger.Info().Msg("shutdown complete")
	return code
}

func newLogger(format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("log.level %q: want trace, debug, info, warn or error", level)
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	var l zerolog.Logger
	switch format {
	case "json":
		l = zerolog.New(os.Stderr)
	case "console":
		// Colours only on a terminal; a log file gets plain text.
		fi, err := os.Stderr.Stat()
		noColor := err != nil || fi.Mode()&os.ModeCharDevice == 0
		l = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000", NoColor: noColor})
	default:
		return zerolog.Logger{}, fmt.Errorf("log.format %q: want console or json", format)
	}
	return l.Level(lvl).With().Timestamp().Logger(), nil
}

// servePprof serves net/http/pprof's profiles on addr in the background.
func servePprof(addr string, logger zerolog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			logger.Error().Err(err).Str("addr", addr).Msg("pprof listener failed")
		}
	}()
}
