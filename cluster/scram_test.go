package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/sasl"
)

func upsert(user, mech string, iters int32) ScramUpsert {
	salt := []byte("0123456789abcdef")
	salted, _ := sasl.SaltPassword(mech, user+"-secret", salt, int(iters))
	return ScramUpsert{User: user, Mechanism: mech, Iterations: iters, Salt: salt, Salted: salted}
}

func scramCode(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return nil
}

func TestScramCredentialsStoredHashedAndDeleted(t *testing.T) {
	c := newController(t)
	ctx := context.Background()
	errs := c.AlterUserScramCredentials(ctx, nil, []ScramUpsert{upsert("alice", sasl.ScramSHA256, 4096), upsert("alice", sasl.ScramSHA512, 8192)})
	if errs["alice"] != nil {
		t.Fatal(errs)
	}
	im := c.Image()
	cred, ok := im.ScramCredential(sasl.ScramSHA512, "alice")
	if !ok || cred.Iterations != 8192 {
		t.Fatalf("credential %+v %v", cred, ok)
	}
	want := sasl.CredentialFromSalted(sasl.ScramSHA512, upsert("alice", sasl.ScramSHA512, 8192).Salted, []byte("0123456789abcdef"), 8192)
	if string(cred.StoredKey) != string(want.StoredKey) || string(cred.ServerKey) != string(want.ServerKey) {
		t.Fatal("stored keys are not those derived from the salted password")
	}
	errs = c.AlterUserScramCredentials(ctx, []ScramChange{{User: "alice", Mechanism: sasl.ScramSHA256}}, nil)
	if errs["alice"] != nil {
		t.Fatal(errs)
	}
	if _, ok := c.Image().ScramCredential(sasl.ScramSHA256, "alice"); ok {
		t.Fatal("deleted credential still there")
	}
	if _, ok := im.ScramCredential(sasl.ScramSHA256, "alice"); !ok {
		t.Fatal("an earlier image changed")
	}
}

func TestScramValidationAsKafka(t *testing.T) {
	c := newController(t)
	ctx := context.Background()
	if errs := c.AlterUserScramCredentials(ctx, nil, []ScramUpsert{upsert("bob", sasl.ScramSHA256, 4096)}); errs["bob"] != nil {
		t.Fatal(errs)
	}
	for name, tc := range map[string]struct {
		dels []ScramChange
		ups  []ScramUpsert
		user string
		want *kerr.Error
	}{
		"too few iterations":  {ups: []ScramUpsert{upsert("carol", sasl.ScramSHA256, 4095)}, user: "carol", want: kerr.UnacceptableCredential},
		"too many iterations": {ups: []ScramUpsert{upsert("carol", sasl.ScramSHA256, 16385)}, user: "carol", want: kerr.UnacceptableCredential},
		"empty name":          {ups: []ScramUpsert{upsert("", sasl.ScramSHA256, 4096)}, user: "", want: kerr.UnacceptableCredential},
		"unknown mechanism":   {ups: []ScramUpsert{{User: "carol", Mechanism: "UNKNOWN", Iterations: 4096, Salt: []byte("s"), Salted: []byte("x")}}, user: "carol", want: kerr.UnsupportedSaslMechanism},
		"twice in a request":  {ups: []ScramUpsert{upsert("carol", sasl.ScramSHA256, 4096), upsert("carol", sasl.ScramSHA256, 5000)}, user: "carol", want: kerr.DuplicateResource},
		"delete and upsert":   {dels: []ScramChange{{User: "bob", Mechanism: sasl.ScramSHA256}}, ups: []ScramUpsert{upsert("bob", sasl.ScramSHA256, 5000)}, user: "bob", want: kerr.DuplicateResource},
		"delete missing":      {dels: []ScramChange{{User: "bob", Mechanism: sasl.ScramSHA512}}, user: "bob", want: kerr.ResourceNotFound},
	} {
		errs := c.AlterUserScramCredentials(ctx, tc.dels, tc.ups)
		if got := scramCode(errs[tc.user]); got != tc.want {
			t.Errorf("%s: %v, want %v", name, errs[tc.user], tc.want)
		}
	}
	// A user's operations apply together or not at all; other users'
	// are independent.
	errs := c.AlterUserScramCredentials(ctx, nil, []ScramUpsert{upsert("dave", sasl.ScramSHA256, 4096), upsert("dave", sasl.ScramSHA512, 100), upsert("erin", sasl.ScramSHA256, 4096)})
	if scramCode(errs["dave"]) != kerr.UnacceptableCredential || errs["erin"] != nil {
		t.Fatalf("errs %v", errs)
	}
	im := c.Image()
	if _, ok := im.ScramCredential(sasl.ScramSHA256, "dave"); ok {
		t.Fatal("dave's valid operation applied though another of his failed")
	}
	if _, ok := im.ScramCredential(sasl.ScramSHA256, "erin"); !ok {
		t.Fatal("erin's credential not applied")
	}
	if cred, _ := im.ScramCredential(sasl.ScramSHA256, "bob"); cred.Iterations != 4096 {
		t.Fatalf("bob changed by refused requests: %d", cred.Iterations)
	}
}

func TestScramCredentialsSurviveASnapshot(t *testing.T) {
	s := NewState()
	cred, _ := sasl.NewCredential(sasl.ScramSHA256, "pw", 4096)
	mustApply(t, s, &Command{Type: CmdScram, Scram: []ScramChange{{User: "alice", Mechanism: sasl.ScramSHA256, Cred: &cred}}})
	b, err := s.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewState()
	if err := r.RestoreSnapshot(b); err != nil {
		t.Fatal(err)
	}
	got, ok := r.Image(-1).ScramCredential(sasl.ScramSHA256, "alice")
	if !ok || string(got.StoredKey) != string(cred.StoredKey) || got.Iterations != 4096 {
		t.Fatalf("restored %+v %v", got, ok)
	}
}

func TestBootstrapScramSeededWithTheCluster(t *testing.T) {
	cred, _ := sasl.NewCredential(sasl.ScramSHA512, "admin-secret", 4096)
	cfg := testConfig()
	cfg.BootstrapScram = []ScramChange{{User: "admin", Mechanism: sasl.ScramSHA512, Cred: &cred}}
	dir := t.TempDir()
	c := openController(t, cfg, dir)
	if _, ok := c.Image().ScramCredential(sasl.ScramSHA512, "admin"); !ok {
		t.Fatal("bootstrap credential missing")
	}
	// Deleted, it stays deleted across a restart: seeding happens once,
	// when the cluster is created.
	if errs := c.AlterUserScramCredentials(context.Background(), []ScramChange{{User: "admin", Mechanism: sasl.ScramSHA512}}, nil); errs["admin"] != nil {
		t.Fatal(errs)
	}
	c.Close()
	c2 := openController(t, cfg, dir)
	if _, ok := c2.Image().ScramCredential(sasl.ScramSHA512, "admin"); ok {
		t.Fatal("bootstrap credential seeded again on restart")
	}
}
