#include "pipeline/prompt_encoding.h"

#include <cstdint>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "core/tensor_dump.h"
#include "core/utf8.h"
#include "models/umt5_encoder.h"
#include "models/umt5_tokenizer.h"

namespace omni::pipeline {
namespace {

// ---- HTML character references ---------------------------------------------------------------------------

struct Entity {
  const char* name;
  char32_t cp;
};

// The HTML 4 entity set (values as in HTML5) plus &apos;. All take a semicolon; the Latin-1 block and the
// four markup characters are also recognized without one (HTML5's legacy forms), see kLegacy below.
constexpr Entity kEntities[] = {
    {"quot", 34},      {"amp", 38},      {"apos", 39},      {"lt", 60},       {"gt", 62},       {"QUOT", 34},
    {"AMP", 38},       {"LT", 60},       {"GT", 62},        {"COPY", 169},    {"REG", 174},     {"nbsp", 160},
    {"iexcl", 161},    {"cent", 162},    {"pound", 163},    {"curren", 164},  {"yen", 165},     {"brvbar", 166},
    {"sect", 167},     {"uml", 168},     {"copy", 169},     {"ordf", 170},    {"laquo", 171},   {"not", 172},
    {"shy", 173},      {"reg", 174},     {"macr", 175},     {"deg", 176},     {"plusmn", 177},  {"sup2", 178},
    {"sup3", 179},     {"acute", 180},   {"micro", 181},    {"para", 182},    {"middot", 183},  {"cedil", 184},
    {"sup1", 185},     {"ordm", 186},    {"raquo", 187},    {"frac14", 188},  {"frac12", 189},  {"frac34", 190},
    {"iquest", 191},   {"Agrave", 192},  {"Aacute", 193},   {"Acirc", 194},   {"Atilde", 195},  {"Auml", 196},
    {"Aring", 197},    {"AElig", 198},   {"Ccedil", 199},   {"Egrave", 200},  {"Eacute", 201},  {"Ecirc", 202},
    {"Euml", 203},     {"Igrave", 204},  {"Iacute", 205},   {"Icirc", 206},   {"Iuml", 207},    {"ETH", 208},
    {"Ntilde", 209},   {"Ograve", 210},  {"Oacute", 211},   {"Ocirc", 212},   {"Otilde", 213},  {"Ouml", 214},
    {"times", 215},    {"Oslash", 216},  {"Ugrave", 217},   {"Uacute", 218},  {"Ucirc", 219},   {"Uuml", 220},
    {"Yacute", 221},   {"THORN", 222},   {"szlig", 223},    {"agrave", 224},  {"aacute", 225},  {"acirc", 226},
    {"atilde", 227},   {"auml", 228},    {"aring", 229},    {"aelig", 230},   {"ccedil", 231},  {"egrave", 232},
    {"eacute", 233},   {"ecirc", 234},   {"euml", 235},     {"igrave", 236},  {"iacute", 237},  {"icirc", 238},
    {"iuml", 239},     {"eth", 240},     {"ntilde", 241},   {"ograve", 242},  {"oacute", 243},  {"ocirc", 244},
    {"otilde", 245},   {"ouml", 246},    {"divide", 247},   {"oslash", 248},  {"ugrave", 249},  {"uacute", 250},
    {"ucirc", 251},    {"uuml", 252},    {"yacute", 253},   {"thorn", 254},   {"yuml", 255},    {"OElig", 338},
    {"oelig", 339},    {"Scaron", 352},  {"scaron", 353},   {"Yuml", 376},    {"fnof", 402},    {"circ", 710},
    {"tilde", 732},    {"Alpha", 913},   {"Beta", 914},     {"Gamma", 915},   {"Delta", 916},   {"Epsilon", 917},
    {"Zeta", 918},     {"Eta", 919},     {"Theta", 920},    {"Iota", 921},    {"Kappa", 922},   {"Lambda", 923},
    {"Mu", 924},       {"Nu", 925},      {"Xi", 926},       {"Omicron", 927}, {"Pi", 928},      {"Rho", 929},
    {"Sigma", 931},    {"Tau", 932},     {"Upsilon", 933},  {"Phi", 934},     {"Chi", 935},     {"Psi", 936},
    {"Omega", 937},    {"alpha", 945},   {"beta", 946},     {"gamma", 947},   {"delta", 948},   {"epsilon", 949},
    {"zeta", 950},     {"eta", 951},     {"theta", 952},    {"iota", 953},    {"kappa", 954},   {"lambda", 955},
    {"mu", 956},       {"nu", 957},      {"xi", 958},       {"omicron", 959}, {"pi", 960},      {"rho", 961},
    {"sigmaf", 962},   {"sigma", 963},   {"tau", 964},      {"upsilon", 965}, {"phi", 966},     {"chi", 967},
    {"psi", 968},      {"omega", 969},   {"thetasym", 977}, {"upsih", 978},   {"piv", 982},     {"ensp", 8194},
    {"emsp", 8195},    {"thinsp", 8201}, {"zwnj", 8204},    {"zwj", 8205},    {"lrm", 8206},    {"rlm", 8207},
    {"ndash", 8211},   {"mdash", 8212},  {"lsquo", 8216},   {"rsquo", 8217},  {"sbquo", 8218},  {"ldquo", 8220},
    {"rdquo", 8221},   {"bdquo", 8222},  {"dagger", 8224},  {"Dagger", 8225}, {"bull", 8226},   {"hellip", 8230},
    {"permil", 8240},  {"prime", 8242},  {"Prime", 8243},   {"lsaquo", 8249}, {"rsaquo", 8250}, {"oline", 8254},
    {"frasl", 8260},   {"euro", 8364},   {"image", 8465},   {"weierp", 8472}, {"real", 8476},   {"trade", 8482},
    {"alefsym", 8501}, {"larr", 8592},   {"uarr", 8593},    {"rarr", 8594},   {"darr", 8595},   {"harr", 8596},
    {"crarr", 8629},   {"lArr", 8656},   {"uArr", 8657},    {"rArr", 8658},   {"dArr", 8659},   {"hArr", 8660},
    {"forall", 8704},  {"part", 8706},   {"exist", 8707},   {"empty", 8709},  {"nabla", 8711},  {"isin", 8712},
    {"notin", 8713},   {"ni", 8715},     {"prod", 8719},    {"sum", 8721},    {"minus", 8722},  {"lowast", 8727},
    {"radic", 8730},   {"prop", 8733},   {"infin", 8734},   {"ang", 8736},    {"and", 8743},    {"or", 8744},
    {"cap", 8745},     {"cup", 8746},    {"int", 8747},     {"there4", 8756}, {"sim", 8764},    {"cong", 8773},
    {"asymp", 8776},   {"ne", 8800},     {"equiv", 8801},   {"le", 8804},     {"ge", 8805},     {"sub", 8834},
    {"sup", 8835},     {"nsub", 8836},   {"sube", 8838},    {"supe", 8839},   {"oplus", 8853},  {"otimes", 8855},
    {"perp", 8869},    {"sdot", 8901},   {"lceil", 8968},   {"rceil", 8969},  {"lfloor", 8970}, {"rfloor", 8971},
    {"lang", 0x27E8},  {"rang", 0x27E9}, {"loz", 9674},     {"spades", 9824}, {"clubs", 9827},  {"hearts", 9829},
    {"diams", 9830},
};

// Python's html5 table keyed as it is: "name;" for every entity, and "name" alone for the legacy ones (the
// Latin-1 block 160-255, the four markup characters and their upper-case spellings, COPY and REG).
const std::unordered_map<std::string, char32_t>& entity_table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, char32_t>();
    for (const auto& e : kEntities) {
      const std::string name = e.name;
      (*t)[name + ";"] = e.cp;
      const bool legacy = (e.cp >= 160 && e.cp <= 255) || e.cp == 34 || e.cp == 38 || e.cp == 60 || e.cp == 62;
      if (legacy) (*t)[name] = e.cp;
    }
    return t;
  }();
  return *table;
}

// HTML5's replacements for numeric references to C1 controls (windows-1252) and a few others.
bool invalid_charref(uint64_t num, std::u32string* out) {
  static const std::unordered_map<uint64_t, char32_t> kMap = {
      {0x00, 0xFFFD}, {0x0d, 0x0D},   {0x80, 0x20AC}, {0x81, 0x81},   {0x82, 0x201A}, {0x83, 0x0192}, {0x84, 0x201E},
      {0x85, 0x2026}, {0x86, 0x2020}, {0x87, 0x2021}, {0x88, 0x02C6}, {0x89, 0x2030}, {0x8a, 0x0160}, {0x8b, 0x2039},
      {0x8c, 0x0152}, {0x8d, 0x8D},   {0x8e, 0x017D}, {0x8f, 0x8F},   {0x90, 0x90},   {0x91, 0x2018}, {0x92, 0x2019},
      {0x93, 0x201C}, {0x94, 0x201D}, {0x95, 0x2022}, {0x96, 0x2013}, {0x97, 0x2014}, {0x98, 0x02DC}, {0x99, 0x2122},
      {0x9a, 0x0161}, {0x9b, 0x203A}, {0x9c, 0x0153}, {0x9d, 0x9D},   {0x9e, 0x017E}, {0x9f, 0x0178},
  };
  auto it = kMap.find(num);
  if (it == kMap.end()) return false;
  *out = std::u32string(1, it->second);
  return true;
}

// Code points a numeric reference may not produce: they are dropped.
bool invalid_codepoint(uint64_t n) {
  return (n >= 0x1 && n <= 0x8) || n == 0xB || (n >= 0xE && n <= 0x1F) || (n >= 0x7F && n <= 0x9F) ||
         (n >= 0xFDD0 && n <= 0xFDEF) || (n & 0xFFFE) == 0xFFFE;
}

bool is_ascii_digit(char32_t c) {
  return c >= '0' && c <= '9';
}
bool is_ascii_hex(char32_t c) {
  return is_ascii_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// One reference starting at s[i] == '&' (Python's regex
// &(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?) and _replace_charref). Returns the characters
// consumed (0: no reference here, the '&' is literal) and appends the replacement to `out`.
size_t replace_charref(const std::u32string& s, size_t i, std::u32string& out) {
  const size_t n = s.size();
  size_t j = i + 1;
  if (j < n && s[j] == '#') {
    const bool hex = j + 1 < n && (s[j + 1] == 'x' || s[j + 1] == 'X');
    size_t k = hex ? j + 2 : j + 1;
    const size_t digits_begin = k;
    uint64_t num = 0;
    bool overflow = false;
    while (k < n && (hex ? is_ascii_hex(s[k]) : is_ascii_digit(s[k]))) {
      const char32_t c = s[k];
      const uint64_t d = is_ascii_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
      if (num > 0x10FFFF)
        overflow = true;  // already out of range; keep scanning the digits
      else
        num = num * (hex ? 16 : 10) + d;
      ++k;
    }
    if (k == digits_begin) return 0;  // "&#" or "&#x" without digits: not a reference
    if (k < n && s[k] == ';') ++k;
    if (overflow) num = 0x110000;
    std::u32string rep;
    if (invalid_charref(num, &rep)) {
      out += rep;
    } else if ((num >= 0xD800 && num <= 0xDFFF) || num > 0x10FFFF) {
      out.push_back(0xFFFD);
    } else if (!invalid_codepoint(num)) {
      out.push_back(static_cast<char32_t>(num));
    }
    return k - i;
  }
  // Named: up to 32 characters other than \t \n \f space < & # ;, then an optional ';'.
  size_t k = j;
  while (k < n && k - j < 32) {
    const char32_t c = s[k];
    if (c == '\t' || c == '\n' || c == '\f' || c == ' ' || c == '<' || c == '&' || c == '#' || c == ';') break;
    ++k;
  }
  if (k == j) return 0;
  if (k < n && s[k] == ';') ++k;
  const std::u32string name32 = s.substr(j, k - j);
  const std::string name = utf8_encode(name32);
  const auto& table = entity_table();
  auto it = table.find(name);
  if (it != table.end()) {
    out.push_back(it->second);
    return k - i;
  }
  // The longest prefix that is an entity by itself (only legacy names can match without ';').
  for (size_t len = name32.size() - 1; len >= 2 && len < name32.size(); --len) {
    auto p = table.find(utf8_encode(name32.substr(0, len)));
    if (p != table.end()) {
      out.push_back(p->second);
      out += name32.substr(len);
      return k - i;
    }
  }
  out.push_back('&');
  out += name32;
  return k - i;
}

std::u32string unescape32(const std::u32string& s) {
  if (s.find(U'&') == std::u32string::npos) return s;
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '&') {
      const size_t used = replace_charref(s, i, out);
      if (used > 0) {
        i += used;
        continue;
      }
    }
    out.push_back(s[i]);
    ++i;
  }
  return out;
}

std::u32string strip32(const std::u32string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_py_space(s[b])) ++b;
  while (e > b && is_py_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

}  // namespace

std::string html_unescape(const std::string& text) {
  return utf8_encode(unescape32(utf8_decode(text)));
}

std::string clean_prompt(const std::string& text) {
  // basic_clean: html.unescape(html.unescape(text)).strip()
  std::u32string s = strip32(unescape32(unescape32(utf8_decode(text))));
  // whitespace_clean: re.sub(r"\s+", " ", text).strip()
  std::u32string folded;
  folded.reserve(s.size());
  bool in_space = false;
  for (char32_t c : s) {
    if (is_py_space(c)) {
      if (!in_space) folded.push_back(' ');
      in_space = true;
    } else {
      folded.push_back(c);
      in_space = false;
    }
  }
  return utf8_encode(strip32(folded));
}

at::Tensor encode_prompts(const models::Umt5Tokenizer& tokenizer, const models::Umt5Encoder& encoder,
                          const std::vector<std::string>& prompts, int64_t max_sequence_length, at::ScalarType dtype,
                          const at::Device& device, models::UnitHooks* hooks) {
  std::vector<std::string> cleaned;
  cleaned.reserve(prompts.size());
  for (const auto& p : prompts) cleaned.push_back(clean_prompt(p));
  const auto tokens = tokenizer(cleaned, max_sequence_length);
  // Added tokens (<extra_id_N>, a bos new to the vocabulary) can lie past a small encoder's embedding table.
  const int64_t max_id = tokens.input_ids.max().item<int64_t>();
  OMNI_CHECK_INPUT(max_id < encoder.config().vocab_size, tokenizer.path(), ": a prompt tokenizes to id ", max_id,
                   ", past the text encoder's vocabulary of ", encoder.config().vocab_size,
                   " (an added special token such as <extra_id_N> written in the prompt?)");
  auto ids = tokens.input_ids.to(device);                     // [B, L]
  auto mask = tokens.attention_mask.to(device);               // [B, L]
  auto hidden = encoder.forward(ids, mask, hooks).to(dtype);  // [B, L, D]
  debug::dump("input_ids", ids);
  debug::dump("attention_mask", mask);
  debug::dump("last_hidden_state", hidden);
  // diffusers keeps u[:len] and pads with zeros back to max_sequence_length; a select does the same exactly.
  auto lengths = mask.gt(0).sum(1, /*keepdim=*/true);  // [B, 1]
  auto positions = at::arange(max_sequence_length, at::TensorOptions().dtype(at::kLong).device(device));
  auto keep = (positions.unsqueeze(0) < lengths).unsqueeze(-1);     // [B, L, 1]
  return at::where(keep, hidden, at::zeros({}, hidden.options()));  // [B, L, D]
}

}  // namespace omni::pipeline
