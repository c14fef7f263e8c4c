package gokafkatest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/gokafkatest"
)

// testFollowerOutage is what a test function's body looks like: a real
// three-node cluster, a topic replicated on all of them, a follower taken
// away and brought back.
func testFollowerOutage(t testing.TB) {
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(3), gokafkatest.BrokerProperty("min.insync.replicas", "2"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	c.WaitFullISR("orders")

	leader := c.Leader("orders", 0)
	follower := leader%3 + 1
	c.Kill(follower) // abruptly; the ISR shrinks to two, acks=all still succeeds
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.Restart(follower) // same ports, same data; it catches up and rejoins
	c.WaitFullISR("orders")
	fmt.Println("ISR after restart:", len(c.Metadata().Partition("orders", 0).ISR))
}

func ExampleNewCluster() {
	// In a test, pass the test's own t.
	t := &exampleT{}
	defer t.cleanup()
	testFollowerOutage(t)
	// Output: ISR after restart: 3
}

// exampleT stands in for a *testing.T outside a test function.
type exampleT struct {
	testing.TB
	cleanups []func()
	dirs     []string
}

func (t *exampleT) Helper()                   {}
func (t *exampleT) Log(args ...any)           {}
func (t *exampleT) Logf(string, ...any)       {}
func (t *exampleT) Cleanup(f func())          { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (t *exampleT) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (t *exampleT) TempDir() string {
	d, err := os.MkdirTemp("", "gokafkatest-example")
	if err != nil {
		panic(err)
	}
	t.dirs = append(t.dirs, d)
	return d
}

func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	for _, d := range t.dirs {
		os.RemoveAll(d)
	}
}
