package chain

import (
	"bytes"
	"fmt"
	"strconv"
)

// MaxNumberDigits bounds the digits of a number in canonical form: a few
// bytes of exponent must not become megabytes of zeros, and Postgres'
// numeric holds at most 16383 digits after the point.
const MaxNumberDigits = 1000

// appendLiteral appends a number, true, false or null token in canonical
// form; the token is known to be valid JSON.
func appendLiteral(out, tok []byte) ([]byte, error) {
	switch tok[0] {
	case 't', 'f', 'n':
		return append(out, tok...), nil
	}
	return appendNumber(out, tok)
}

// appendNumber appends a number token as Postgres prints the numeric it
// becomes in jsonb: in plain decimal notation, with as many digits after
// the point as were written less the exponent (never fewer than none), and
// without a minus sign on zero. So 1.50 stays 1.50, 1.50e1 becomes 15.0,
// 1E5 becomes 100000, 25e-2 becomes 0.25 and -0.0 becomes 0.0. A token
// with no exponent and no negative zero is copied as written.
func appendNumber(out, tok []byte) ([]byte, error) {
	neg := tok[0] == '-'
	body := tok
	if neg {
		body = tok[1:]
	}
	mant, expText, hasExp := bytes.Cut(body, []byte{'e'})
	if !hasExp {
		mant, expText, hasExp = bytes.Cut(body, []byte{'E'})
	}
	intPart, frac, _ := bytes.Cut(mant, []byte{'.'})
	digits := make([]byte, 0, len(intPart)+len(frac))
	digits = append(append(digits, intPart...), frac...)
	significant := bytes.TrimLeft(digits, "0")
	if !hasExp && (!neg || len(significant) > 0) {
		if len(digits) > MaxNumberDigits {
			return nil, fmt.Errorf("number %.20s… has %d digits; the limit is %d", tok, len(digits), MaxNumberDigits)
		}
		return append(out, tok...), nil
	}
	exp := int64(0)
	if hasExp {
		var err error
		if exp, err = strconv.ParseInt(string(bytes.TrimPrefix(expText, []byte{'+'})), 10, 32); err != nil {
			return nil, fmt.Errorf("number %.40s: exponent out of range", tok)
		}
	}
	// The value is digits × 10^shift, printed with scale digits after the
	// point.
	shift := exp - int64(len(frac))
	scale := max(0, -shift)
	var intLen int64 // digits before the point
	switch {
	case len(significant) == 0:
		intLen = 1
	case shift >= 0:
		intLen = int64(len(significant)) + shift
	default:
		intLen = max(1, int64(len(significant))-scale)
	}
	if intLen+scale > MaxNumberDigits {
		return nil, fmt.Errorf("number %.40s has %d digits written out; the limit is %d", tok, intLen+scale, MaxNumberDigits)
	}
	if len(significant) == 0 { // zero: no sign
		out = append(out, '0')
		if scale > 0 {
			out = append(out, '.')
			out = append(out, bytes.Repeat([]byte{'0'}, int(scale))...)
		}
		return out, nil
	}
	if neg {
		out = append(out, '-')
	}
	if shift >= 0 {
		out = append(out, significant...)
		return append(out, bytes.Repeat([]byte{'0'}, int(shift))...), nil
	}
	n := int64(len(significant))
	if n > scale {
		out = append(out, significant[:n-scale]...)
		out = append(out, '.')
		return append(out, significant[n-scale:]...), nil
	}
	out = append(out, '0', '.')
	out = append(out, bytes.Repeat([]byte{'0'}, int(scale-n))...)
	return append(out, significant...), nil
}
