// Package logkeys holds the check that every log field key in gokafka is
// snake_case (conn, client_id, log_end_offset), so that one query finds a
// field whichever package logged it. It has no code, only its test.
package logkeys
