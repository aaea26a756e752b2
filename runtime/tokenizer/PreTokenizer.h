// GLM-4's pre-tokenizer: splits text into the pieces that byte-level BPE then encodes one by one.
//
// It implements exactly the regex of GLM-4 / GLM-5's tokenizer.json (also Llama-3's):
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
//
// found left to right without overlaps, the alternatives tried in order at each position with the
// backtracking a regex engine does. The matches cover the text: every character is in some piece.
// Classes: \p{L} and \p{N} are Unicode 14.0's General_Category L* and N*, \s is White_Space (see
// Unicode.h); the (?i:...) contractions fold case as Unicode simple case folding does for those
// letters (ASCII, plus U+017F long s, which folds to 's'). Bytes that are not valid UTF-8 are
// single characters of none of these classes (so they join [^\s\p{L}\p{N}]+ runs) and are kept.
#pragma once

#include <string_view>
#include <vector>

namespace glm5rt::tokenizer {

// Splits `text` into pre-tokens; the pieces are views into `text` and concatenate back to it. The
// end of `text` is the end of the input for \s+(?!\S): the tokenizer calls this once per stretch
// of text between special tokens.
std::vector<std::string_view> preTokenize(std::string_view text);

} // namespace glm5rt::tokenizer
