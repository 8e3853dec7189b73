package jsonschema

import "strings"

// decimal is an exact JSON number: digits × 10^exp, negative if neg. digits
// has no leading or trailing zeros; zero is digits == "" (and never neg).
// Working on the digit string rather than big.Rat keeps a hostile literal such
// as 1e999999999 cheap: nothing is ever expanded.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// expLimit clamps exponents so arithmetic on them cannot overflow. Numbers
// beyond it compare as if at the limit, far outside any real schema bound.
const expLimit = 1 << 40

// parseDecimal parses a JSON number literal.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[start:i]
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return decimal{}, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[start:i]
		if frac == "" {
			return decimal{}, false
		}
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			if exp < expLimit {
				exp = exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if start == i {
			return decimal{}, false
		}
		if exp > expLimit {
			exp = expLimit
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	d.digits = trimmed
	d.exp = exp
	if d.digits == "" {
		return decimal{}, true // -0 is 0
	}
	return d, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isInteger reports whether d has no fractional part.
func (d decimal) isInteger() bool { return d.digits == "" || d.exp >= 0 }

// int64 returns d as an int64 if it is an integer that fits.
func (d decimal) int64() (int64, bool) {
	if !d.isInteger() || int64(len(d.digits))+d.exp > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(d.digits); i++ {
		n = n*10 + int64(d.digits[i]-'0')
	}
	for e := d.exp; e > 0; e-- {
		n *= 10
	}
	if d.neg {
		n = -n
	}
	return n, true
}

func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// compareDecimal returns -1, 0 or +1 as a is less than, equal to or greater
// than b.
func compareDecimal(a, b decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	return sa * compareMagnitude(a, b)
}

func compareMagnitude(a, b decimal) int {
	// The position of the leading digit decides unless it is the same.
	pa := int64(len(a.digits)) + a.exp
	pb := int64(len(b.digits)) + b.exp
	if pa != pb {
		if pa < pb {
			return -1
		}
		return 1
	}
	// Same leading position: digit strings compare lexicographically, and
	// with trailing zeros trimmed a longer string has a further non-zero
	// digit, which strings.Compare already ranks higher.
	return strings.Compare(a.digits, b.digits)
}
