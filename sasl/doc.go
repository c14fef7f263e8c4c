// Package sasl holds the server side of the SASL mechanisms gokafka's
// SASL_PLAINTEXT and SASL_SSL listeners offer, as Kafka implements them:
// PLAIN (users from the listener's JAAS config), SCRAM-SHA-256 and
// SCRAM-SHA-512 (RFC 5802/7677, credentials from the metadata quorum) and
// OAUTHBEARER (RFC 7628; Kafka's unsecured-JWS validator, or signed JWTs
// checked against a JWKS). It also parses JAAS configuration values and
// derives SCRAM credentials (KIP-554).
//
// A Session is one exchange: the connection feeds it each client message
// and sends back what it returns. It does no I/O and keeps no goroutine;
// protocol/ drives it (SaslHandshake, SaslAuthenticate, raw tokens) and
// knows nothing of the mechanisms. Failures are *Error values carrying the
// message Kafka sends the client; their Reason is for the broker's log
// only, never for the client.
//
// GSSAPI (Kerberos) is not offered.
package sasl
