// Package tlsconf builds gokafka's TLS configurations from Kafka's ssl.*
// properties: PEM keystores and truststores (ssl.keystore.type=PEM, Kafka
// 2.7+, KIP-651), ssl.client.auth, ssl.enabled.protocols,
// ssl.cipher.suites, ssl.endpoint.identification.algorithm, and the
// principal of a client certificate (ssl.principal.mapping.rules, KIP-371).
//
// A Store holds one listener's settings (the broker-wide ssl.* overlaid by
// listener.name.<name>.ssl.*). Its server and client tls.Configs read the
// key pair and the trust anchors through the Store on every handshake, and
// the Store reloads the files when their modification time or size
// changes, so that replaced certificates take effect on the next
// connection without a restart, as Kafka's dynamic keystore update does.
//
// It must not know about connections or Kafka requests; protocol/ runs the
// handshakes and cluster/ and the peer clients use the client side.
package tlsconf
