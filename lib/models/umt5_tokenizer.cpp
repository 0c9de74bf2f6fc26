#include "models/umt5_tokenizer.h"

#include <dlfcn.h>
#include <sentencepiece_processor.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "io/json_file.h"
#include "models/private_library.h"

namespace omni::models {

namespace {

// ---- UTF-8 ---------------------------------------------------------------------------------------------

// Decodes UTF-8 into code points; a malformed sequence becomes U+FFFD (Python would have refused the bytes
// when the prompt was read, so any consistent choice does).
std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = 0;
    char32_t cp = 0;
    if (c < 0x80) {
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      extra = 1;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      extra = 2;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      extra = 3;
    } else {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    bool ok = i + static_cast<size_t>(extra) < s.size();  // the continuation bytes are all there
    for (int k = 1; ok && k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80)
        ok = false;
      else
        cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) utf8_append(out, cp);
  return out;
}

// Python's str.isspace() (which is also what `\s` and str.strip() use for str patterns).
bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

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

// ---- libsentencepiece, opened privately ------------------------------------------------------------------
//
// Debian's libsentencepiece.so.0 carries its own protobuf-lite (3.14) and exports those symbols, while
// Debian's LibTorch loads the system libprotobuf.so.32 (3.21). Linked normally, whichever copy is found
// first breaks the other while the process starts (a crash in libprotobuf's static initializers, or
// protobuf's version check aborting inside SentencePiece). So the library is opened at run time with
// RTLD_LOCAL (its symbols stay out of the global scope) and RTLD_DEEPBIND (it binds to its own protobuf
// first). The tokenizer then needs only three entry points by name; every other call is virtual and goes
// through the object's vtable, so nothing here references a SentencePiece symbol at link time.
struct SentencePieceLibrary {
  void (*construct)(void* self) = nullptr;                      // SentencePieceProcessor::SentencePieceProcessor()
  void (*destroy_status)(void* status) = nullptr;               // util::Status::~Status()
  const char* (*status_message)(const void* status) = nullptr;  // util::Status::error_message() const
};

const SentencePieceLibrary& sentencepiece_library() {
  static PrivateLibrary library({"libsentencepiece.so.0", "libsentencepiece.so"});
  static const SentencePieceLibrary lib = [] {
    SentencePieceLibrary l;
    const auto find = [](const char* symbol) { return library.symbol(symbol); };
    l.construct = reinterpret_cast<void (*)(void*)>(find("_ZN13sentencepiece22SentencePieceProcessorC1Ev"));
    l.destroy_status = reinterpret_cast<void (*)(void*)>(find("_ZN13sentencepiece4util6StatusD1Ev"));
    l.status_message =
        reinterpret_cast<const char* (*)(const void*)>(find("_ZNK13sentencepiece4util6Status13error_messageEv"));
    return l;
  }();
  OMNI_CHECK(lib.construct && lib.destroy_status && lib.status_message,
             "cannot load libsentencepiece (the UMT5 tokenizer needs it): ", library.error());
  return lib;
}

// Runs `call`, which returns a util::Status by value, and returns its error message ("" when ok). The status
// is built in local storage (guaranteed copy elision) and destroyed through the library's destructor.
template <typename Call>
std::string status_error(Call&& call) {
  const auto& lib = sentencepiece_library();
  alignas(sentencepiece::util::Status) unsigned char storage[sizeof(sentencepiece::util::Status)];
  auto* status = new (storage) sentencepiece::util::Status(call());
  std::string message;
  if (!status->ok()) {
    const char* m = lib.status_message(status);
    message = m && *m ? m : "unknown SentencePiece error";
  }
  lib.destroy_status(status);
  return message;
}

bool file_exists(const std::string& path, bool* is_dir = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  if (is_dir) *is_dir = S_ISDIR(st.st_mode);
  return true;
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

// ---- tokenizer ---------------------------------------------------------------------------------------------

Umt5Tokenizer::Umt5Tokenizer(const std::string& spiece_path) : path_(spiece_path) {
  bool is_dir = false;
  OMNI_CHECK_INPUT(file_exists(spiece_path, &is_dir), spiece_path,
                   ": SentencePiece model not found (the tokenizer needs the checkpoint's tokenizer/spiece.model)");
  OMNI_CHECK_INPUT(!is_dir, spiece_path, ": expected a SentencePiece model file, found a directory");
  {
    // Constructed by the library; the virtual destructor (unique_ptr's delete) frees it again.
    void* memory = ::operator new(sizeof(sentencepiece::SentencePieceProcessor));
    try {
      sentencepiece_library().construct(memory);
    } catch (...) {
      ::operator delete(memory);
      throw;
    }
    sp_.reset(static_cast<sentencepiece::SentencePieceProcessor*>(memory));
  }
  const std::string load_error = status_error([&] { return sp_->Load(spiece_path); });
  OMNI_CHECK_INPUT(load_error.empty(), spiece_path, ": cannot load the SentencePiece model: ", load_error);
  pad_id_ = sp_->pad_id();
  eos_id_ = sp_->eos_id();
  // T5's conventions; a model without them is not a T5 tokenizer and would silently produce wrong ids.
  OMNI_CHECK_INPUT(pad_id_ >= 0 && eos_id_ >= 0, spiece_path, ": the SentencePiece model defines no ",
                   pad_id_ < 0 ? "pad" : "eos", " piece (T5 tokenizers have pad 0 and eos 1)");
  for (int id = 0; id < sp_->GetPieceSize(); ++id) {
    if (sp_->IsControl(id) || sp_->IsUnknown(id)) {
      const std::string piece = sp_->IdToPiece(id);
      if (!piece.empty()) special_.emplace_back(piece, id);
    }
  }
  std::stable_sort(special_.begin(), special_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

namespace {

// A special token of tokenizer_config.json / special_tokens_map.json: a string, or an AddedToken object
// {"content": ..., "lstrip": ..., ...}; null when absent or null.
std::optional<std::string> token_content(io::ConfigFile& file, const std::string& key) {
  const nlohmann::json* v = file.find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_object()) {
    const auto it = v->find("content");
    OMNI_CHECK_INPUT(it != v->end() && it->is_string(), file.source(), ": '", key,
                     "' must be a token string or an object with a string 'content', found ", v->dump());
    return it->get<std::string>();
  }
  OMNI_CHECK_INPUT(v->is_string(), file.source(), ": '", key, "' must be a token string, found ", v->dump());
  return v->get<std::string>();
}

// A list of special tokens, or transformers 5's {"name": token} form of extra_special_tokens (4.48+ write {}).
std::vector<std::string> token_list(io::ConfigFile& file, const std::string& key) {
  std::vector<std::string> out;
  const nlohmann::json* v = file.find(key);
  if (v == nullptr) return out;
  OMNI_CHECK_INPUT(v->is_array() || v->is_object(), file.source(), ": '", key, "' must be a list of tokens, found ",
                   v->dump());
  for (const auto& e : *v) {
    if (e.is_object() && e.contains("content") && e["content"].is_string()) {
      out.push_back(e["content"].get<std::string>());
    } else {
      OMNI_CHECK_INPUT(e.is_string(), file.source(), ": '", key, "' must hold token strings, found ", e.dump());
      out.push_back(e.get<std::string>());
    }
  }
  return out;
}

// Keys of tokenizer_config.json that transformers stores or uses for decoding, padding sides, the model's
// length limit (the pipelines pass max_length) and loading: none changes the ids of an encoded prompt.
constexpr std::initializer_list<const char*> kTokenizerBookkeeping = {"model_max_length",
                                                                      "clean_up_tokenization_spaces",
                                                                      "padding_side",
                                                                      "truncation_side",
                                                                      "model_input_names",
                                                                      "name_or_path",
                                                                      "backend",
                                                                      "is_local",
                                                                      "local_files_only",
                                                                      "spaces_between_special_tokens",
                                                                      "use_fast",
                                                                      "processor_class",
                                                                      "auto_map",
                                                                      "tokenizer_file",
                                                                      "vocab_file",
                                                                      "add_prefix_space",
                                                                      "legacy"};

}  // namespace

Umt5Tokenizer Umt5Tokenizer::from_dir(const std::string& tokenizer_dir) {
  Umt5Tokenizer tok(tokenizer_dir + "/spiece.model");
  const std::string config_path = tokenizer_dir + "/tokenizer_config.json";
  const std::string map_path = tokenizer_dir + "/special_tokens_map.json";
  std::optional<io::ConfigFile> config, map;
  if (file_exists(config_path)) config.emplace(io::ConfigFile::read(config_path, "T5Tokenizer"));
  if (file_exists(map_path)) map.emplace(io::ConfigFile::read(map_path, "T5Tokenizer"));

  if (config) {
    const std::string cls = config->string_or("tokenizer_class", "T5Tokenizer");
    OMNI_CHECK_INPUT(cls == "T5Tokenizer" || cls == "T5TokenizerFast", config_path, ": tokenizer_class is '", cls,
                     "', expected T5Tokenizer or T5TokenizerFast (the UMT5 text encoder's tokenizer)");
    // transformers would hand these to SentencePiece (sampling, alpha, ...) or keep special tokens unsplit.
    if (const nlohmann::json* v = config->find("sp_model_kwargs")) {
      OMNI_CHECK_INPUT(v->is_object() && v->empty(), config_path, ": sp_model_kwargs ", v->dump(),
                       " is not supported (only {}: they change how SentencePiece encodes)");
    }
    OMNI_CHECK_INPUT(!config->bool_or("split_special_tokens", false), config_path,
                     ": split_special_tokens = true is not supported (special tokens in a prompt are matched whole)");
    config->known(kTokenizerBookkeeping);
    // transformers 5 writes the Unigram model's unk_id here (2, even for vocabularies whose <unk> is 3: issue
    // 20); the unknown piece we use is spiece.model's own.
    config->int_or("unk_id", 0);
  }

  // T5Tokenizer's <extra_id_0> .. <extra_id_{N-1}> (100 unless the config says otherwise) come after the
  // vocabulary, in reverse: <extra_id_i> is piece_count + N - 1 - i.
  int64_t extra_ids = 100;
  if (config) {
    extra_ids = config->int_or("extra_ids", 100);
    OMNI_CHECK_INPUT(extra_ids >= 0, config_path, ": 'extra_ids' must not be negative, found ", extra_ids);
  }
  const int64_t pieces = tok.sp_->GetPieceSize();
  for (int64_t i = 0; i < extra_ids; ++i)
    tok.special_.emplace_back(str_cat("<extra_id_", i, ">"), pieces + extra_ids - 1 - i);

  // The id of a token the files name: a piece of the vocabulary, an extra id, or -1.
  auto id_of = [&](const std::string& token) -> int64_t {
    for (const auto& sp : tok.special_)
      if (sp.first == token) return sp.second;
    const int id = tok.sp_->PieceToId(token);
    return tok.sp_->IdToPiece(id) == token ? id : -1;
  };
  int64_t next_id = pieces + extra_ids;  // tokens new to the vocabulary are appended, as transformers adds them
  auto add_special = [&](const std::string& token, const std::string& source, const std::string& key) {
    OMNI_CHECK_INPUT(!token.empty(), source, ": '", key, "' is an empty token");
    for (const auto& sp : tok.special_)
      if (sp.first == token) return;  // a control piece, an extra id, or listed twice
    const int64_t id = id_of(token);
    tok.special_.emplace_back(token, id >= 0 ? id : next_id++);
  };

  // The named special tokens: tokenizer_config.json wins over special_tokens_map.json (transformers reads the
  // map for tokens the config leaves out). Those that set ids must be the SentencePiece model's own.
  auto named = [&](const char* key) -> std::pair<std::optional<std::string>, std::string> {
    std::optional<std::string> from_config = config ? token_content(*config, key) : std::nullopt;
    std::optional<std::string> from_map = map ? token_content(*map, key) : std::nullopt;
    if (from_config) return {from_config, config_path};
    return {from_map, map_path};
  };
  for (const char* key : {"eos_token", "unk_token"}) {
    const auto [token, source] = named(key);
    if (!token) continue;
    const bool eos = std::string(key) == "eos_token";
    const int64_t want = eos ? tok.eos_id_ : tok.sp_->unk_id();
    OMNI_CHECK_INPUT(id_of(*token) == want, source, ": ", key, " '", *token, "' is not '",
                     tok.sp_->IdToPiece(static_cast<int>(want)), "'", ", the SentencePiece model's ",
                     eos ? "eos" : "unk", " piece (id ", want, "); another one is not supported");
  }
  if (const auto [token, source] = named("pad_token"); token) {
    const int64_t id = id_of(*token);
    OMNI_CHECK_INPUT(id >= 0, source, ": pad_token '", *token, "' is not a piece of ", tok.path_,
                     " (a new padding token is not supported)");
    tok.pad_id_ = id;
  }
  // transformers 5 adds a new bos first, then the additional special tokens in their order.
  if (const auto [token, source] = named("bos_token"); token) add_special(*token, source, "bos_token");
  if (config) {
    // transformers 5 writes extra_special_tokens, 4.x additional_special_tokens; special_tokens_map.json's list
    // is not read (checked against transformers 5.17).
    for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
      const std::vector<std::string> tokens = token_list(*config, key);
      // T5Tokenizer: a list naming some <extra_id_N> must name all extra_ids of them; with fewer, transformers'
      // converted vocabulary keeps the others as ordinary Unigram pieces, which SentencePiece cannot match.
      int64_t listed = 0;
      for (const auto& token : tokens) listed += token.find("<extra_id_") != std::string::npos ? 1 : 0;
      OMNI_CHECK_INPUT(extra_ids == 0 || listed == 0 || listed == extra_ids, config_path, ": '", key, "' lists ",
                       listed, " <extra_id_N> tokens but extra_ids is ", extra_ids,
                       " (transformers requires all of them or none)");
      for (const auto& token : tokens) add_special(token, config_path, key);
    }
    // {"<id>": {"content": ...}, ...}: what the tokenizer that saved the folder had at each id; a different
    // token there would give other ids.
    if (const nlohmann::json* v = config->find("added_tokens_decoder")) {
      OMNI_CHECK_INPUT(v->is_object(), config_path, ": 'added_tokens_decoder' must be an object, found ",
                       v->type_name());
      for (auto it = v->begin(); it != v->end(); ++it) {
        OMNI_CHECK_INPUT(it->is_object() && it->contains("content") && (*it)["content"].is_string(), config_path,
                         ": added_tokens_decoder['", it.key(), "'] must hold a string 'content', found ", it->dump());
        const std::string token = (*it)["content"].get<std::string>();
        const int64_t id = id_of(token);
        OMNI_CHECK_INPUT(std::to_string(id) == it.key(), config_path, ": added_tokens_decoder gives id ", it.key(),
                         " to '", token, "', but this tokenizer has it at ",
                         id < 0 ? std::string("no id") : std::to_string(id),
                         " (an added token outside spiece.model and extra_ids is not supported)");
      }
    }
  }
  if (map) {
    token_list(*map, "additional_special_tokens");  // validated only (see above)
    map->warn_unknown();
  }
  if (config) config->warn_unknown();
  std::stable_sort(tok.special_.begin(), tok.special_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return tok;
}

Umt5Tokenizer::~Umt5Tokenizer() = default;
Umt5Tokenizer::Umt5Tokenizer(Umt5Tokenizer&&) noexcept = default;
Umt5Tokenizer& Umt5Tokenizer::operator=(Umt5Tokenizer&&) noexcept = default;

int64_t Umt5Tokenizer::vocab_size() const {
  return sp_->GetPieceSize();
}

std::vector<int64_t> Umt5Tokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  auto encode_segment = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    std::vector<int> seg;
    const std::string piece_text = text.substr(begin, end - begin);
    const std::string error = status_error([&] { return sp_->Encode(piece_text, &seg); });
    OMNI_CHECK(error.empty(), path_, ": SentencePiece failed to encode a prompt: ", error);
    ids.insert(ids.end(), seg.begin(), seg.end());
  };
  // Special tokens are matched leftmost, longest first, on the raw text (HF's added-token split).
  size_t seg_begin = 0;
  size_t i = 0;
  while (i < text.size()) {
    const std::pair<std::string, int64_t>* hit = nullptr;
    if (text[i] == '<') {
      for (const auto& sp : special_) {
        if (text.compare(i, sp.first.size(), sp.first) == 0) {
          hit = &sp;
          break;
        }
      }
    }
    if (hit) {
      encode_segment(seg_begin, i);
      ids.push_back(hit->second);
      i += hit->first.size();
      seg_begin = i;
    } else {
      ++i;
    }
  }
  encode_segment(seg_begin, text.size());
  return ids;
}

std::vector<int64_t> Umt5Tokenizer::encode_with_eos(const std::string& text, int64_t max_length) const {
  OMNI_CHECK_USAGE(max_length >= 1, "max_sequence_length must be at least 1 (room for eos), got ", max_length);
  auto ids = encode(text);
  // HF truncates the sequence to max_length minus the special tokens it adds, then appends eos.
  if (static_cast<int64_t>(ids.size()) > max_length - 1) ids.resize(static_cast<size_t>(max_length - 1));
  ids.push_back(eos_id_);
  return ids;
}

TokenizedBatch Umt5Tokenizer::operator()(const std::vector<std::string>& texts, int64_t max_length) const {
  const auto batch = static_cast<int64_t>(texts.size());
  TokenizedBatch out;
  out.input_ids = at::full({batch, max_length}, pad_id_, at::TensorOptions().dtype(at::kLong));  // [B, L]
  out.attention_mask = at::zeros({batch, max_length}, at::TensorOptions().dtype(at::kLong));     // [B, L]
  auto ids_acc = out.input_ids.accessor<int64_t, 2>();
  auto mask_acc = out.attention_mask.accessor<int64_t, 2>();
  for (int64_t b = 0; b < batch; ++b) {
    const auto ids = encode_with_eos(texts[b], max_length);
    for (size_t t = 0; t < ids.size(); ++t) {
      ids_acc[b][t] = ids[t];
      mask_acc[b][t] = 1;
    }
    out.lengths.push_back(static_cast<int64_t>(ids.size()));
  }
  return out;
}

}  // namespace omni::models
