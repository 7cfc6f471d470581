package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// This file holds the character-level rules that llama.cpp's unicode.cpp
// follows: how bytes become code points (leniently, one U+FFFD per bad
// byte), how code points become bytes again, the classes the
// pre-tokenizers test, and GPT-2's byte-to-character table.

// utf8Len is the length of the UTF-8 sequence that a lead byte announces,
// from its high four bits alone, as llama.cpp's unicode_len_utf8: 1 for
// ASCII and for stray continuation bytes, 2, 3 or 4 otherwise.
func utf8Len(b byte) int {
	return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4]
}

// decodeRune decodes the code point at s[i:] the way llama.cpp's
// unicode_cpt_from_utf8 does: overlong forms and surrogates are accepted,
// a lead byte of F0-F7 may give a value above U+10FFFF, and a byte that
// starts no complete sequence is an error (ok false), after which the
// caller moves on by one byte.
func decodeRune(s string, i int) (r rune, n int, ok bool) {
	b0 := s[i]
	cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
	switch {
	case b0 < 0x80:
		return rune(b0), 1, true
	case b0&0x40 == 0:
		return 0, 0, false
	case b0&0x20 == 0:
		if !cont(1) {
			return 0, 0, false
		}
		return rune(b0&0x1F)<<6 | rune(s[i+1]&0x3F), 2, true
	case b0&0x10 == 0:
		if !cont(1) || !cont(2) {
			return 0, 0, false
		}
		return rune(b0&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3, true
	case b0&0x08 == 0:
		if !cont(1) || !cont(2) || !cont(3) {
			return 0, 0, false
		}
		return rune(b0&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F), 4, true
	}
	return 0, 0, false
}

// codepoints appends the code points of s to dst, one U+FFFD for each byte
// that starts no sequence (llama.cpp's unicode_cpts_from_utf8).
func codepoints(dst []rune, s string) []rune {
	if utf8.ValidString(s) {
		for _, r := range s {
			dst = append(dst, r)
		}
		return dst
	}
	for i := 0; i < len(s); {
		r, n, ok := decodeRune(s, i)
		if !ok {
			dst = append(dst, utf8.RuneError)
			i++
			continue
		}
		dst = append(dst, r)
		i += n
	}
	return dst
}

// appendRune appends the UTF-8 form of r as llama.cpp's unicode_cpt_to_utf8
// writes it, surrogates included. llama.cpp fails on values above
// U+10FFFF (which only a lead byte of F5-F7 can give); they become U+FFFD.
func appendRune(dst []byte, r rune) []byte {
	switch {
	case r < 0:
		return utf8.AppendRune(dst, utf8.RuneError)
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r&0x3F))
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
	case r <= unicode.MaxRune:
		return append(dst, 0xF0|byte(r>>18), 0x80|byte(r>>12&0x3F), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
	}
	return utf8.AppendRune(dst, utf8.RuneError)
}

// class is what the pre-tokenizers ask of a code point.
type class uint8

const (
	// inRange marks a code point inside the piece being split; outside
	// it (before the start or past the end) a class is zero, which is
	// how llama.cpp's splitters see the ends of a piece.
	inRange class = 1 << iota
	letter
	number
	space
)

// classOf classifies r: \p{L}, \p{N}, and White_Space, which are
// llama.cpp's is_letter, is_number and is_whitespace. Go's tables are
// Unicode 15.0.
func classOf(r rune) class {
	if r < 0x80 {
		return asciiClass[r]
	}
	c := inRange
	switch {
	case unicode.IsLetter(r):
		c |= letter
	case unicode.IsNumber(r):
		c |= number
	case unicode.Is(unicode.White_Space, r):
		c |= space
	}
	return c
}

var asciiClass = func() (t [128]class) {
	for r := range t {
		t[r] = inRange
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			t[r] |= letter
		case '0' <= r && r <= '9':
			t[r] |= number
		case r == ' ' || '\t' <= r && r <= '\r':
			t[r] |= space
		}
	}
	return t
}()

// byteChars is GPT-2's table from bytes to the characters that stand for
// them in a byte-level vocabulary ("Ġ" for a space), as UTF-8.
var byteChars, charBytes = func() (enc [256]string, dec map[rune]byte) {
	dec = make(map[rune]byte, 256)
	n := 0
	for b := range 256 {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE) {
			r = rune(256 + n)
			n++
		}
		enc[b] = string(r)
		dec[r] = byte(b)
	}
	return enc, dec
}()
