package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

// serveKfake runs a kfake cluster with one broker per port until SIGTERM or
// SIGINT. It is the body of the hidden -serve-kfake mode, which the
// scenario runner starts as a child process. dir, if set, makes kfake write
// its segments there (kfake.DataDir, without per-batch fsync, like Kafka's
// and gokafka's default flush settings).
//
// kfake keeps one copy of each partition whatever the replication factor:
// it accepts a replication factor up to its number of brokers and reports
// every replica in sync, but copies nothing between brokers.
func serveKfake(ports string, dir string) error {
	var ps []int
	for _, f := range strings.Split(ports, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("-kfake-ports: bad port %q", f)
		}
		ps = append(ps, p)
	}
	opts := []kfake.Opt{kfake.NumBrokers(len(ps)), kfake.Ports(ps...)}
	if dir != "" {
		opts = append(opts, kfake.DataDir(dir))
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	<-sig
	c.Close()
	return nil
}
