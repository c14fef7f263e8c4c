package sasl

import (
	"fmt"
	"strings"
	"unicode"
)

// JAAS is one login module entry of a sasl.jaas.config value:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";
type JAAS struct {
	LoginModule string
	// Flag is required, requisite, sufficient or optional.
	Flag    string
	Options map[string]string
}

// ParseJAAS parses a sasl.jaas.config value as Kafka's JaasConfig does:
// exactly one login module, a control flag, then name=value options
// (values bare or double-quoted with backslash escapes), ending with ';'.
func ParseJAAS(s string) (JAAS, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return JAAS{}, err
	}
	var j JAAS
	i := 0
	word := func(what string) (string, error) {
		if i >= len(toks) || toks[i].kind != tokWord {
			return "", fmt.Errorf("JAAS config: expected %s", what)
		}
		i++
		return toks[i-1].text, nil
	}
	if j.LoginModule, err = word("a login module class"); err != nil {
		return JAAS{}, err
	}
	if j.Flag, err = word("a control flag"); err != nil {
		return JAAS{}, err
	}
	switch strings.ToLower(j.Flag) {
	case "required", "requisite", "sufficient", "optional":
		j.Flag = strings.ToLower(j.Flag)
	default:
		return JAAS{}, fmt.Errorf("JAAS config: invalid control flag %q for login module %s", j.Flag, j.LoginModule)
	}
	j.Options = map[string]string{}
	for {
		if i >= len(toks) {
			return JAAS{}, fmt.Errorf("JAAS config: login module %s is not terminated by ';'", j.LoginModule)
		}
		if toks[i].kind == tokSemi {
			i++
			break
		}
		name, err := word("an option name")
		if err != nil {
			return JAAS{}, err
		}
		if i >= len(toks) || toks[i].kind != tokEq {
			return JAAS{}, fmt.Errorf("JAAS config: option %s has no value", name)
		}
		i++
		if i >= len(toks) || (toks[i].kind != tokWord && toks[i].kind != tokQuoted) {
			return JAAS{}, fmt.Errorf("JAAS config: option %s has no value", name)
		}
		j.Options[name] = toks[i].text
		i++
	}
	if i != len(toks) {
		return JAAS{}, fmt.Errorf("JAAS config: it must hold exactly one login module")
	}
	return j, nil
}

type tokKind int

const (
	tokWord tokKind = iota
	tokQuoted
	tokEq
	tokSemi
)

type token struct {
	kind tokKind
	text string
}

func jaasTokens(s string) ([]token, error) {
	var out []token
	r := []rune(s)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '=':
			out = append(out, token{kind: tokEq})
			i++
		case c == ';':
			out = append(out, token{kind: tokSemi})
			i++
		case c == '"' || c == '\'':
			q := c
			var b strings.Builder
			i++
			closed := false
			for i < len(r) {
				if r[i] == '\\' && i+1 < len(r) {
					b.WriteRune(r[i+1])
					i += 2
					continue
				}
				if r[i] == q {
					closed = true
					i++
					break
				}
				b.WriteRune(r[i])
				i++
			}
			if !closed {
				return nil, fmt.Errorf("JAAS config: unterminated quoted value")
			}
			out = append(out, token{kind: tokQuoted, text: b.String()})
		default:
			start := i
			for i < len(r) && !unicode.IsSpace(r[i]) && r[i] != '=' && r[i] != ';' && r[i] != '"' && r[i] != '\'' {
				i++
			}
			out = append(out, token{kind: tokWord, text: string(r[start:i])})
		}
	}
	return out, nil
}

// PlainUsers returns the user_<name>=<password> options of a PLAIN login
// module, as Kafka's PlainServerCallbackHandler reads them.
func (j JAAS) PlainUsers() map[string]string {
	users := map[string]string{}
	for k, v := range j.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users
}
