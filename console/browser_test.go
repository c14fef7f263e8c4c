package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/console"
	"github.com/gokafka/gokafka/gokafkatest"
)

// browser returns a headless browser's path, or skips (fails under CI:
// .ci/run installs Debian's chromium).
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no headless browser (chromium) installed; .ci/run installs Debian's chromium")
	}
	t.Skip("no headless browser installed (apt-get install chromium to run the console's browser test)")
	return ""
}

// artifactDir is where screenshots go: GOKAFKA_TEST_ARTIFACTS if set, else
// a directory kept after the test.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("GOKAFKA_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, err := os.MkdirTemp("", "gokafka-console-artifacts-")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The console in a real browser: the page loads without console errors,
// shows the three brokers and a topic's partitions, and a paused follower
// leaves the ISR on the page within the ISR timeout and comes back after
// it resumes, without a reload.
func TestConsoleInABrowserShowsAFollowerLeaveAndRejoinTheISR(t *testing.T) {
	exe := browser(t)
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(3))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 3, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	c.WaitFullISR("orders")
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	leader := c.Leader("orders", 0)
	follower := leader%3 + 1

	// The console of the leader of orders-0, which knows every replica's
	// LEO of it.
	con := console.New(c.Server(leader).ConsoleSource(), console.Options{Interval: 200 * time.Millisecond})
	srv := httptest.NewServer(con)
	defer srv.Close()
	defer con.Close()

	actx, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.WindowSize(1400, 1000))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var pageErrors []string
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			pageErrors = append(pageErrors, fmt.Sprintf("exception: %s at %s:%d", msg, d.URL, d.LineNumber))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				pageErrors = append(pageErrors, "console.error: "+strings.Join(args, " "))
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				pageErrors = append(pageErrors, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}

	replica := fmt.Sprintf(`[data-replica="orders/0/%d"]`, follower)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(`[data-broker="3"]`),
		chromedp.WaitVisible(`[data-partition="orders/1"]`),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector('%s'); return e && e.dataset.inIsr === "true" && e.dataset.leo === "25"; })()`, replica),
			chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		html, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("topics").innerText`))
		t.Fatalf("page before the pause: %v\n%s", err, html)
	}
	brokers, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-broker]").length`))
	if err != nil {
		t.Fatal(err)
	}
	partitions, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-partition^="orders/"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if brokers != 3 || partitions != 2 {
		t.Fatalf("page shows %d brokers and %d partitions of orders, want 3 and 2", brokers, partitions)
	}

	c.Pause(follower)
	if err := chromedp.Do(bctx,
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector('%s').dataset.inIsr === "false"`, replica),
			chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Poll[chromedp.Void](`document.querySelector('[data-event="isr_shrink"][data-topic="orders"]') !== null`,
			chromedp.WithPollingTimeout(10*time.Second)),
	); err != nil {
		html, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
		t.Fatalf("waiting for the paused follower %d to leave the ISR on the page: %v\n%s", follower, err, html)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artifactDir(t), "console-follower-out-of-isr.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)

	c.Resume(follower)
	if err := chromedp.Do(bctx,
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector('%s').dataset.inIsr === "true"`, replica),
			chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Poll[chromedp.Void](`document.querySelector('[data-event="isr_expand"][data-topic="orders"]') !== null`,
			chromedp.WithPollingTimeout(10*time.Second)),
	); err != nil {
		t.Fatalf("waiting for follower %d to rejoin the ISR on the page: %v", follower, err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(pageErrors) > 0 {
		t.Fatalf("the page logged errors:\n%s", strings.Join(pageErrors, "\n"))
	}
}
