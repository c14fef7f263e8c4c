package cluster

// SCRAM credentials (KIP-554): salted and hashed passwords per user and
// mechanism, managed with AlterUserScramCredentials and read with
// DescribeUserScramCredentials. They live in the metadata like client
// quotas, so that every broker authenticates against the same ones; a
// non-controller forwards a change to the active controller. Validation
// follows Kafka's ScramControlManager: per user, every operation is
// checked and either all of that user's apply or none do
// (UNACCEPTABLE_CREDENTIAL for an empty name or iterations outside
// 4096..16384, UNSUPPORTED_SASL_MECHANISM, DUPLICATE_RESOURCE for a user
// and mechanism named twice, RESOURCE_NOT_FOUND for deleting what does
// not exist). Only the salt, the stored and server keys and the
// iterations are kept; the salted password a client sends is not.

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/sasl"
)

// CmdScram upserts and deletes SCRAM credentials (see ScramChange).
const CmdScram CommandType = "scram_credentials"

// ScramChange sets (Cred non-nil) or deletes one user's credential for
// one mechanism.
type ScramChange struct {
	User      string                `json:"user"`
	Mechanism string                `json:"mechanism"`
	Cred      *sasl.ScramCredential `json:"cred,omitempty"`
}

// ScramUpsert is a credential to set, as AlterUserScramCredentials
// carries it: the salt and the salted password.
type ScramUpsert struct {
	User       string
	Mechanism  string
	Iterations int32
	Salt       []byte
	Salted     []byte
}

// ScramError is a refused SCRAM operation: Kafka's code and message.
type ScramError struct {
	Code *kerr.Error
	Msg  string
}

func (e *ScramError) Error() string { return e.Msg }
func (e *ScramError) Unwrap() error { return e.Code }

// ScramMechanismCode is the mechanism's number in the SCRAM APIs (1 is
// SCRAM-SHA-256, 2 SCRAM-SHA-512), 0 for none.
func ScramMechanismCode(mech string) int8 {
	switch mech {
	case sasl.ScramSHA256:
		return 1
	case sasl.ScramSHA512:
		return 2
	}
	return 0
}

// ScramMechanismName is the inverse of ScramMechanismCode ("" if unknown).
func ScramMechanismName(code int8) string {
	switch code {
	case 1:
		return sasl.ScramSHA256
	case 2:
		return sasl.ScramSHA512
	}
	return ""
}

// ScramCredential implements sasl.CredentialStore over the image.
func (im *Image) ScramCredential(mech, user string) (sasl.ScramCredential, bool) {
	c, ok := im.ScramCredentials[user][mech]
	return c, ok
}

// applyScram applies validated changes, replacing rather than mutating
// the per-user maps images share.
func (s *State) applyScram(changes []ScramChange) {
	for _, ch := range changes {
		creds := maps.Clone(s.scram[ch.User])
		if creds == nil {
			creds = map[string]sasl.ScramCredential{}
		}
		if ch.Cred == nil {
			delete(creds, ch.Mechanism)
		} else {
			creds[ch.Mechanism] = *ch.Cred
		}
		if len(creds) == 0 {
			delete(s.scram, ch.User)
		} else {
			s.scram[ch.User] = creds
		}
	}
}

// ScramUsers returns the users with credentials, sorted.
func (im *Image) ScramUsers() []string {
	users := make([]string, 0, len(im.ScramCredentials))
	for u := range im.ScramCredentials {
		users = append(users, u)
	}
	sort.Strings(users)
	return users
}

// ValidateScram checks deletions and upsertions against im as Kafka's
// controller does and returns the changes to apply and, per user, the
// error refusing all of that user's operations.
func ValidateScram(im *Image, deletions []ScramChange, upserts []ScramUpsert) ([]ScramChange, map[string]error) {
	errs := map[string]error{}
	fail := func(user string, code *kerr.Error, msg string) {
		if errs[user] == nil {
			errs[user] = &ScramError{Code: code, Msg: msg}
		}
	}
	type key struct{ user, mech string }
	seen := map[key]int{}
	for _, d := range deletions {
		seen[key{d.User, d.Mechanism}]++
	}
	for _, u := range upserts {
		seen[key{u.User, u.Mechanism}]++
	}
	check := func(user, mech string) bool {
		switch {
		case user == "":
			fail(user, kerr.UnacceptableCredential, "Username must not be empty")
		case sasl.ScramHash(mech) == nil:
			fail(user, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case seen[key{user, mech}] > 1:
			fail(user, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		default:
			return true
		}
		return false
	}
	var changes []ScramChange
	for _, d := range deletions {
		if !check(d.User, d.Mechanism) {
			continue
		}
		if _, ok := im.ScramCredential(d.Mechanism, d.User); !ok {
			fail(d.User, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
			continue
		}
		changes = append(changes, ScramChange{User: d.User, Mechanism: d.Mechanism})
	}
	for _, u := range upserts {
		if !check(u.User, u.Mechanism) {
			continue
		}
		switch {
		case u.Iterations < sasl.ScramMinIterations:
			fail(u.User, kerr.UnacceptableCredential, "Too few iterations")
			continue
		case u.Iterations > sasl.ScramMaxIterations:
			fail(u.User, kerr.UnacceptableCredential, "Too many iterations")
			continue
		case len(u.Salt) == 0 || len(u.Salted) == 0:
			fail(u.User, kerr.UnacceptableCredential, "Salt and salted password must not be empty")
			continue
		}
		cred := sasl.CredentialFromSalted(u.Mechanism, u.Salted, u.Salt, u.Iterations)
		changes = append(changes, ScramChange{User: u.User, Mechanism: u.Mechanism, Cred: &cred})
	}
	kept := changes[:0]
	for _, ch := range changes {
		if errs[ch.User] == nil {
			kept = append(kept, ch)
		}
	}
	return kept, errs
}

// AlterUserScramCredentials validates and applies credential changes and
// returns the error of each user named (nil: applied).
func (c *Controller) AlterUserScramCredentials(ctx context.Context, deletions []ScramChange, upserts []ScramUpsert) map[string]error {
	if !c.IsLeader() {
		return c.forwardAlterScram(ctx, deletions, upserts)
	}
	changes, errs := ValidateScram(c.Image(), deletions, upserts)
	for _, d := range deletions {
		if _, ok := errs[d.User]; !ok {
			errs[d.User] = nil
		}
	}
	for _, u := range upserts {
		if _, ok := errs[u.User]; !ok {
			errs[u.User] = nil
		}
	}
	if len(changes) > 0 {
		if err := c.log.Propose(ctx, &Command{Type: CmdScram, Scram: changes}); err != nil {
			for _, ch := range changes {
				errs[ch.User] = err
			}
		}
	}
	return errs
}

func (c *Controller) forwardAlterScram(ctx context.Context, deletions []ScramChange, upserts []ScramUpsert) map[string]error {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, d := range deletions {
		rd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		rd.Name, rd.Mechanism = d.User, ScramMechanismCode(d.Mechanism)
		req.Deletions = append(req.Deletions, rd)
	}
	for _, u := range upserts {
		ru := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		ru.Name, ru.Mechanism, ru.Iterations, ru.Salt, ru.SaltedPassword = u.User, ScramMechanismCode(u.Mechanism), u.Iterations, u.Salt, u.Salted
		req.Upsertions = append(req.Upsertions, ru)
	}
	errs := map[string]error{}
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		for _, res := range r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			if res.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
		return false
	})
	if errors.Is(err, errLocalLeader) {
		return c.AlterUserScramCredentials(ctx, deletions, upserts)
	}
	if err != nil {
		for _, d := range deletions {
			errs[d.User] = err
		}
		for _, u := range upserts {
			errs[u.User] = err
		}
		return errs
	}
	for _, res := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
		if res.ErrorCode != 0 {
			msg := kerr.ErrorForCode(res.ErrorCode).Error()
			if res.ErrorMessage != nil {
				msg = *res.ErrorMessage
			}
			errs[res.User] = &ScramError{Code: kerr.ErrorForCode(res.ErrorCode).(*kerr.Error), Msg: msg}
		} else {
			errs[res.User] = nil
		}
	}
	// Wait for the applied changes, so that the client reads them back
	// from this broker.
	// An upsert is applied when this broker holds the credential with
	// the upsert's salt and iterations: a replaced credential is present
	// before the change too.
	type state struct {
		present    bool
		salt       []byte
		iterations int32
	}
	want := map[[2]string]state{} // user, mechanism
	for _, d := range deletions {
		if errs[d.User] == nil {
			want[[2]string{d.User, d.Mechanism}] = state{}
		}
	}
	for _, u := range upserts {
		if errs[u.User] == nil {
			want[[2]string{u.User, u.Mechanism}] = state{present: true, salt: u.Salt, iterations: u.Iterations}
		}
	}
	if len(want) > 0 {
		err := c.awaitLocal(ctx, func(im *Image) bool {
			for k, w := range want {
				cur, ok := im.ScramCredential(k[1], k[0])
				if ok != w.present {
					return false
				}
				if ok && (cur.Iterations != w.iterations || !bytes.Equal(cur.Salt, w.salt)) {
					return false
				}
			}
			return true
		})
		if err != nil {
			for u, e := range errs {
				if e == nil {
					errs[u] = err
				}
			}
		}
	}
	return errs
}

// BootstrapScramCommand is the command seeding credentials when the
// cluster is created (gokafka.scram.bootstrap.users, as
// kafka-storage format --add-scram).
func BootstrapScramCommand(creds []ScramChange) *Command {
	if len(creds) == 0 {
		return nil
	}
	return &Command{Type: CmdScram, Scram: creds}
}
