package tlsconf

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// Encrypted PKCS#8 (RFC 5958 EncryptedPrivateKeyInfo) with PBES2 (RFC
// 8018): PBKDF2 with an HMAC-SHA PRF and an AES-CBC or 3DES-CBC cipher,
// what `openssl pkcs8 -topk8` and Kafka's PEM keystores use. The older
// PBES1 schemes are not read.

var (
	oidPBES2          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2         = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACWithSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACWithSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACWithSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACWithSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC      = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC      = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC      = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC     = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("encrypted PKCS#8: %w", err)
	}
	if !info.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted PKCS#8: unsupported scheme %v (only PBES2)", info.Algo.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("PBES2 parameters: %w", err)
	}
	if !params.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("PBES2: unsupported key derivation %v (only PBKDF2)", params.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("PBKDF2 parameters: %w", err)
	}
	var h func() hash.Hash
	switch prf := kdf.PRF.Algorithm; {
	case len(prf) == 0, prf.Equal(oidHMACWithSHA1):
		h = sha1.New
	case prf.Equal(oidHMACWithSHA256):
		h = sha256.New
	case prf.Equal(oidHMACWithSHA384):
		h = sha512.New384
	case prf.Equal(oidHMACWithSHA512):
		h = sha512.New
	default:
		return nil, fmt.Errorf("PBKDF2: unsupported PRF %v", prf)
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch s := params.Scheme.Algorithm; {
	case s.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case s.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case s.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case s.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("PBES2: unsupported cipher %v", s)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.Scheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("PBES2 cipher parameters: %w", err)
	}
	if kdf.Iterations <= 0 || kdf.Iterations > 10_000_000 {
		return nil, fmt.Errorf("PBKDF2: iteration count %d out of range", kdf.Iterations)
	}
	key, err := pbkdf2.Key(h, string(password), kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, err
	}
	bs := block.BlockSize()
	if len(iv) != bs || len(info.Data) == 0 || len(info.Data)%bs != 0 {
		return nil, errors.New("PBES2: malformed ciphertext")
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	// PKCS#7 padding; a wrong password shows here or in the parse.
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs {
		return nil, errors.New("wrong ssl.key.password or corrupt key")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("wrong ssl.key.password or corrupt key")
		}
	}
	return out[:len(out)-pad], nil
}
