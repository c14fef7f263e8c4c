package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gokafka/gokafka/console"
	"github.com/gokafka/gokafka/gokafkatest"
)

// What a broker gives the console: a group's lag against the HW, and an
// open transaction holding the LSO below the HW.
func TestBrokerStateShowsGroupLagAndTheLSOAnOpenTransactionHolds(t *testing.T) {
	c := gokafkatest.NewCluster(t, gokafkatest.Nodes(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	adm := kadm.NewClient(plain)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The group has committed 4 of the 10 records.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 4, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "g", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	// A transaction opens at offset 10 and stays open.
	tx, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.TransactionalID("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("in txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	src := c.Server(1).ConsoleSource()
	var st console.State
	deadline := time.Now().Add(30 * time.Second)
	for {
		st = src.State()
		if len(st.Transactions) == 1 && len(st.Groups) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	g := st.Groups[0]
	if g.ID != "g" || len(g.Partitions) != 1 || g.Partitions[0].Committed != 4 || g.Partitions[0].Lag == nil || *g.Partitions[0].Lag != 7 {
		t.Errorf("group %+v (lag %v), want committed 4 and lag 7 below HW 11", g, g.Partitions)
	}
	x := st.Transactions[0]
	if x.Topic != "t" || x.FirstOffset != 10 || x.LSO != 10 || x.HW != 11 || x.Held != 1 {
		t.Errorf("transaction %+v, want first offset 10, LSO 10, HW 11, one record held", x)
	}
	for _, tp := range st.Topics {
		if tp.Name == "t" {
			p := tp.Partitions[0]
			if p.View != "leader" || p.LSO == nil || *p.LSO != 10 || *p.HW != 11 || len(p.Replicas) != 1 || *p.Replicas[0].LEO != 11 {
				t.Errorf("partition %+v", p)
			}
		}
	}
	if len(st.Brokers) != 1 || !st.Brokers[0].Controller {
		t.Errorf("brokers %+v", st.Brokers)
	}
}
