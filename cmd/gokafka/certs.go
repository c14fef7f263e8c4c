package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/gokafka/gokafka/internal/kconfig"

	"github.com/gokafka/gokafka/tlsconf"
)

// runCerts is `gokafka certs`: a CA (kept and reused in the directory) and
// one certificate per name, each valid as server and client, with SANs
// for 127.0.0.1, ::1, localhost and --hosts.
func runCerts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gokafka certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "certs", "directory to write ca.pem, ca-key.pem and <name>.pem, <name>-cert.pem, <name>-key.pem into")
	hosts := fs.String("hosts", "", "comma-separated extra host names and IP addresses for the certificates' SANs")
	days := fs.Int("days", 365, "validity in days")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gokafka certs [--dir DIR] [--hosts h1,h2] [--days N] NAME...")
		fmt.Fprintln(stderr, "Writes a development CA (reused if DIR has one) and a certificate per NAME (CN=NAME).")
		fmt.Fprintln(stderr, "<name>.pem holds key and certificate, for ssl.keystore.location; ca.pem is the truststore.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 || *days <= 0 {
		fs.Usage()
		return 2
	}
	written, err := tlsconf.GenerateDir(*dir, fs.Args(), kconfig.List(*hosts), time.Duration(*days)*24*time.Hour)
	if err != nil {
		fmt.Fprintln(stderr, "gokafka certs:", err)
		return 1
	}
	for _, p := range written {
		fmt.Fprintln(stdout, p)
	}
	return 0
}
