package tokenizer

import (
	"unicode/utf8"
)

// DecodeOptions are llama_detokenize's two switches.
type DecodeOptions struct {
	// RemoveSpecial leaves out a BOS at the start and an EOS at the end
	// where the model adds them (llama.cpp's remove_special).
	RemoveSpecial bool
	// RenderSpecial writes control tokens as their text ("<s>",
	// "<|im_end|>") instead of leaving them out (unparse_special).
	RenderSpecial bool
}

// Decode returns the text of ids: the inverse of Encode. A BOS at the
// start and an EOS at the end that the model adds are left out, and so
// are control tokens; SentencePiece's space prefix is taken off the
// first piece. For most text Decode(Encode(s, true)) == s; byte-level
// vocabularies whose models ask for it (GPT-2, LLaMA 3) remove spaces
// before punctuation as llama.cpp does (clean_up_tokenization_spaces).
//
// The result is what llama_detokenize gives for the ids without that BOS
// and EOS. Bytes that do not form UTF-8 (a character cut short at the
// end) are kept as they are; ids out of range stand for nothing.
func (t *Tokenizer) Decode(ids []int32) string {
	if t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		ids = ids[1:]
	}
	if t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	return string(t.AppendDecode(nil, ids, DecodeOptions{}))
}

// AppendDecode appends the text of ids to dst exactly as llama.cpp's
// llama_detokenize writes it with the same options.
func (t *Tokenizer) AppendDecode(dst []byte, ids []int32, o DecodeOptions) []byte {
	removeSpace := t.spacePrefix
	if o.RemoveSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if o.RemoveSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	start := len(dst)
	for _, id := range ids {
		p := t.Piece(id, o.RenderSpecial)
		if removeSpace && p != "" && p[0] == ' ' {
			p = p[1:]
		}
		removeSpace = false
		dst = append(dst, p...)
	}
	if t.cleanSpaces {
		dst = dst[:start+len(cleanSpaces(dst[start:]))]
	}
	return dst
}

// Piece returns the bytes that id stands for: its text with ▁ as a space
// (SentencePiece), or the bytes its characters stand for (byte-level
// BPE), or the one byte of a byte token. A control token is its text if
// special is set, and nothing otherwise. A piece may be part of a UTF-8
// sequence that the next tokens complete.
func (t *Tokenizer) Piece(id int32, special bool) string {
	if !t.valid(id) {
		return ""
	}
	if !special && t.attrs[id]&(attrControl|attrUnknown) != 0 {
		return ""
	}
	return t.pieces[id]
}

// piece is llama.cpp's token_to_piece with special set.
func (t *Tokenizer) piece(id int32) string {
	a, text := t.attrs[id], t.tokens[id]
	switch {
	case a&(attrUnknown|attrControl|attrUserDefined) != 0:
		return text
	case a&attrNormal != 0:
		if t.model == modelSPM {
			return string(unescapeSpaces(nil, text))
		}
		return string(byteLevelDecode(nil, text))
	case a&attrByte != 0:
		return string([]byte{byteOf(text)})
	}
	return ""
}

// unescapeSpaces appends s with every ▁ as a space.
func unescapeSpaces(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		if len(s)-i >= 3 && s[i:i+3] == "\u2581" {
			dst = append(dst, ' ')
			i += 3
			continue
		}
		dst = append(dst, s[i])
		i++
	}
	return dst
}

// byteLevelDecode appends the bytes that the characters of s stand for.
// A character outside GPT-2's table is written as llama.cpp writes it:
// [UNK_BYTE_0x<its UTF-8 in hex><s>].
func byteLevelDecode(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for _, r := range s {
		if b, ok := charBytes[r]; ok {
			dst = append(dst, b)
			continue
		}
		dst = append(dst, "[UNK_BYTE_0x"...)
		for _, c := range []byte(string(r)) {
			dst = append(dst, hex[c>>4], hex[c&15])
		}
		dst = append(dst, s...)
		dst = append(dst, ']')
	}
	return dst
}

// byteOf is the byte of a byte token <0xXX>: strtol of the two characters
// after "<0x", as llama.cpp reads it (0 where there are no hex digits).
func byteOf(text string) byte {
	if len(text) < 3 {
		return 0
	}
	s := text[3:min(len(text), 5)]
	var v byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | (c - '0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return v
		}
	}
	return v
}

// cleanSpaces is llama.cpp's clean-up of detokenized text (its
// clean_spaces), in place: " ?", " !", " ." and " ," lose the space,
// " ' " becomes "'", and " 's", " 'm", " 're" and " 've" lose the space.
// It is written as llama.cpp writes it, index for index.
func cleanSpaces(text []byte) []byte {
	total := len(text)
	reset := func() int {
		if total > 0 {
			return 1
		}
		return 0
	}

	total1 := total
	total = reset()
	for i := 1; i < total1; i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			total--
		}
		text[total] = x
		total++
	}

	total2 := total
	total = reset()
	for i := 1; i < total2; i++ {
		x := text[i]
		if x == '\'' && i+1 < total2 && text[i-1] == ' ' && text[i+1] == ' ' {
			total--
			i++
			text[i] = 0
		}
		text[total] = x
		total++
	}

	total3 := total
	total = reset()
	for i := 1; i < total3; i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < total3 {
			x1 := text[i+1]
			switch {
			case x1 == 't' || x1 == 'd':
			case x1 == 's' || x1 == 'm':
				total--
			case i+2 < total3:
				x2 := text[i+2]
				if x1 == 'r' && x2 == 'e' || x1 == 'v' && x2 == 'e' {
					total--
				}
			}
		}
		text[total] = x
		total++
	}
	return text[:total]
}

// Decoder turns a stream of token ids into text, one id at a time, for
// printing tokens as a model generates them. A character whose bytes
// are split over several tokens (byte tokens, byte-level pieces) is held
// back until it is whole, so every string Next returns is valid UTF-8
// where the tokens make it so.
//
// A Decoder writes each piece as Piece does: it keeps the leading space
// of a SentencePiece piece and does no clean-up of spaces, which is
// right for text that continues a prompt.
type Decoder struct {
	t       *Tokenizer
	special bool
	pending []byte
}

// NewDecoder returns a Decoder; with special set it writes control
// tokens as their text.
func (t *Tokenizer) NewDecoder(special bool) *Decoder {
	return &Decoder{t: t, special: special}
}

// Next adds the piece of id and returns the text that is now complete.
func (d *Decoder) Next(id int32) string {
	d.pending = append(d.pending, d.t.Piece(id, d.special)...)
	cut := completeUpTo(d.pending)
	out := string(d.pending[:cut])
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

// Flush returns the bytes held back, as they are, and starts afresh.
func (d *Decoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completeUpTo is the length of b without a UTF-8 sequence at its end
// that is valid so far but cut short. Bytes that can never become UTF-8
// are not held back.
func completeUpTo(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}
