// torch.save's zip archives: the zip directory (zip64 included), then data.pkl through a restricted pickle
// machine that builds values but never calls anything from the file, then one TensorInfo per tensor.
#include "io/pth_file.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"

namespace omni::io {

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kEocd64Sig = 0x06064b50;
constexpr uint32_t kEocd64LocatorSig = 0x07064b50;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr const char* kCorrupt = ": truncated or corrupt zip: ";
constexpr const char* kAllowed =
    "only collections.OrderedDict, torch._utils._rebuild_tensor_v2/_v3, torch.<Type>Storage, "
    "torch.storage.UntypedStorage and torch dtypes";

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Names and keys come from the file: keep messages on one line and of bounded length.
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  return s.size() > 200 ? out + "..." : out;
}

struct ZipEntry {
  int64_t begin = 0;  // absolute file offset of the record's bytes
  int64_t size = 0;
};

// The zip's records by name. Every offset and size is checked against the file before it is used; sums are
// formed only once both terms are known to be inside the file, so they cannot wrap.
std::map<std::string, ZipEntry> read_zip(const std::string& path, const uint8_t* bytes, uint64_t size) {
  auto fits = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  OMNI_CHECK_INPUT(size >= 22, path, kCorrupt, "the file is ", size,
                   " bytes, shorter than an end-of-central-directory record (22 bytes)");
  // The end-of-central-directory record is the last 22 bytes plus a comment of at most 65535 bytes.
  const uint64_t lowest = size - 22 > 65535 ? size - 22 - 65535 : 0;
  uint64_t eocd = size;
  for (uint64_t p = size - 22 + 1; p-- > lowest;) {
    if (le(bytes + p, 4) == kEocdSig && le(bytes + p + 20, 2) <= size - 22 - p) {
      eocd = p;
      break;
    }
  }
  OMNI_CHECK_INPUT(eocd != size, path, kCorrupt, "no end-of-central-directory record in its last ", size - lowest,
                   " bytes (expected a complete torch.save archive)");
  uint64_t count = le(bytes + eocd + 10, 2);
  uint64_t cd_size = le(bytes + eocd + 12, 4);
  uint64_t cd_offset = le(bytes + eocd + 16, 4);
  // torch writes zip64 records for every archive: a locator just before the classic record points at them.
  if (eocd >= 20 && le(bytes + eocd - 20, 4) == kEocd64LocatorSig) {
    const uint64_t rec = le(bytes + eocd - 20 + 8, 8);
    OMNI_CHECK_INPUT(fits(rec, 56) && le(bytes + rec, 4) == kEocd64Sig, path, kCorrupt,
                     "no zip64 end-of-central-directory record at byte ", rec, " (file is ", size, " bytes)");
    count = le(bytes + rec + 32, 8);
    cd_size = le(bytes + rec + 40, 8);
    cd_offset = le(bytes + rec + 48, 8);
  } else {
    OMNI_CHECK_INPUT(count != 0xFFFF && cd_size != 0xFFFFFFFF && cd_offset != 0xFFFFFFFF, path, kCorrupt,
                     "zip64 sizes in the end-of-central-directory record but no zip64 locator");
  }
  OMNI_CHECK_INPUT(fits(cd_offset, cd_size), path, kCorrupt, "central directory [", cd_offset, ", +", cd_size,
                   ") runs past the end of the file (", size, " bytes)");
  OMNI_CHECK_INPUT(count <= cd_size / 46, path, kCorrupt, "a central directory of ", cd_size, " bytes cannot hold the ",
                   count, " records it claims");

  std::map<std::string, ZipEntry> entries;
  const uint64_t cd_end = cd_offset + cd_size;
  uint64_t p = cd_offset;
  for (uint64_t i = 0; i < count; ++i) {
    OMNI_CHECK_INPUT(cd_end - p >= 46 && le(bytes + p, 4) == kCentralHeaderSig, path, kCorrupt,
                     "central directory entry ", i, " at byte ", p, " is missing or cut short");
    const uint64_t flags = le(bytes + p + 8, 2);
    const uint64_t method = le(bytes + p + 10, 2);
    uint64_t stored = le(bytes + p + 20, 4);
    uint64_t length = le(bytes + p + 24, 4);
    const uint64_t name_len = le(bytes + p + 28, 2);
    const uint64_t extra_len = le(bytes + p + 30, 2);
    const uint64_t comment_len = le(bytes + p + 32, 2);
    uint64_t local = le(bytes + p + 42, 4);
    OMNI_CHECK_INPUT(cd_end - p - 46 >= name_len + extra_len + comment_len, path, kCorrupt, "central directory entry ",
                     i, " at byte ", p, " runs past the end of the directory");
    const std::string name(reinterpret_cast<const char*>(bytes + p + 46), name_len);
    // A zip64 extra field (id 1) holds the 64-bit values of the fields set to 0xFFFFFFFF, in this order.
    const uint8_t* x = bytes + p + 46 + name_len;
    uint64_t x_left = extra_len;
    while (x_left >= 4) {
      const uint64_t id = le(x, 2);
      const uint64_t n = le(x + 2, 2);
      OMNI_CHECK_INPUT(n <= x_left - 4, path, kCorrupt, "record '", printable(name), "': extra field overruns");
      if (id == 1) {
        const uint8_t* z = x + 4;
        uint64_t z_left = n;
        for (uint64_t* field : {&length, &stored, &local}) {
          if (*field != 0xFFFFFFFF) continue;
          OMNI_CHECK_INPUT(z_left >= 8, path, kCorrupt, "record '", printable(name), "': zip64 extra field too short");
          *field = le(z, 8);
          z += 8;
          z_left -= 8;
        }
      }
      x += 4 + n;
      x_left -= 4 + n;
    }
    OMNI_CHECK_INPUT(method == 0, path, ": record '", printable(name), "' is compressed (zip method ", method,
                     "), expected stored (method 0) as torch.save writes it: re-save the file with torch.save");
    OMNI_CHECK_INPUT((flags & 1) == 0, path, ": record '", printable(name), "' is encrypted");
    OMNI_CHECK_INPUT(stored == length, path, kCorrupt, "stored record '", printable(name), "' has compressed size ",
                     stored, " != size ", length);
    OMNI_CHECK_INPUT(fits(local, 30) && le(bytes + local, 4) == kLocalHeaderSig, path, kCorrupt, "record '",
                     printable(name), "': no local header at byte ", local, " (file is ", size, " bytes)");
    // The local extra field may differ from the central one: torch pads it so that the data is 64-byte aligned.
    const uint64_t begin = local + 30 + le(bytes + local + 26, 2) + le(bytes + local + 28, 2);
    OMNI_CHECK_INPUT(fits(begin, length), path, kCorrupt, "record '", printable(name), "' [", begin, ", +", length,
                     ") runs past the end of the file (", size, " bytes)");
    OMNI_CHECK_INPUT(
        le(bytes + local + 26, 2) == name_len && std::memcmp(bytes + local + 30, name.data(), name_len) == 0, path,
        kCorrupt, "record '", printable(name), "': local header names another record");
    const ZipEntry e{static_cast<int64_t>(begin), static_cast<int64_t>(length)};
    OMNI_CHECK_INPUT(entries.emplace(name, e).second, path, kCorrupt, "record '", printable(name), "' appears twice");
    p += 46 + name_len + extra_len + comment_len;
  }
  return entries;
}

// What an allowed GLOBAL names.
enum class Global { kNone, kOrderedDict, kRebuildV2, kRebuildV3, kTypedStorage, kUntypedStorage, kDType };

// The types a state dict stores: torch.<storage> (typed storages, _rebuild_tensor_v2) and torch.<dtype> (the
// dtype argument of _rebuild_tensor_v3, which torch uses with an untyped storage for float8 and newer types).
struct TorchType {
  DType dtype;
  const char* storage;
  const char* name;
};

constexpr TorchType kTorchTypes[] = {
    {DType::F64, "DoubleStorage", "float64"},
    {DType::F32, "FloatStorage", "float32"},
    {DType::F16, "HalfStorage", "float16"},
    {DType::BF16, "BFloat16Storage", "bfloat16"},
    {DType::I64, "LongStorage", "int64"},
    {DType::I32, "IntStorage", "int32"},
    {DType::I16, "ShortStorage", "int16"},
    {DType::I8, "CharStorage", "int8"},
    {DType::U8, "ByteStorage", "uint8"},
    {DType::BOOL, "BoolStorage", "bool"},
    {DType::F8_E4M3, "Float8_e4m3fnStorage", "float8_e4m3fn"},
    {DType::F8_E5M2, "Float8_e5m2Storage", "float8_e5m2"},
};

// What module.name a GLOBAL names, or kNone if it is not allowed.
Global allowed_global(const std::string& module, const std::string& name, DType* dtype) {
  if (module == "collections" && name == "OrderedDict") return Global::kOrderedDict;
  if (module == "torch._utils" && name == "_rebuild_tensor_v2") return Global::kRebuildV2;
  if (module == "torch._utils" && name == "_rebuild_tensor_v3") return Global::kRebuildV3;
  if (module == "torch.storage" && name == "UntypedStorage") return Global::kUntypedStorage;
  if (module != "torch") return Global::kNone;
  for (const auto& t : kTorchTypes) {
    *dtype = t.dtype;
    if (name == t.storage) return Global::kTypedStorage;
    if (name == t.name) return Global::kDType;
  }
  return Global::kNone;
}

// A pickled value. All values live in the machine's arena and refer to each other by plain pointers, so a
// hostile pickle (deep nesting, a list holding itself through the memo) cannot overflow the stack on destruction
// or leak a cycle.
struct Value {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kBytes, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = Kind::kNone;
  int64_t num = 0;            // bool, int; the index of a storage or tensor record
  std::string text;           // str, bytes; a global's "module.name"
  std::vector<Value*> items;  // tuple, list; a dict's keys and values alternating, in insertion order
  // dict: position in items of each str key (SETITEM replaces). Views of the keys' own text, which never
  // changes: a long key fetched from the memo again and again is not copied again and again.
  std::map<std::string_view, size_t> str_keys;
  Global global = Global::kNone;
  DType dtype = DType::F32;  // typed storage or dtype global
};

const char* kind_name(const Value* v) {
  static const char* const kNames[] = {"None",    "a bool", "an int", "a float",  "a str",     "a bytes",
                                       "a tuple", "a list", "a dict", "a global", "a storage", "a tensor"};
  return kNames[static_cast<int>(v->kind)];
}

struct Storage {
  std::string record;
  int64_t begin = 0;  // absolute file offset
  int64_t bytes = 0;
};

struct TensorRecord {
  int64_t storage = 0;
  DType dtype = DType::F32;
  int64_t offset = 0;  // in elements
  std::vector<int64_t> size, stride;
  std::string flags;  // the first key of a non-empty metadata dict (conj / neg bit), which changes the values
};

class Unpickler {
 public:
  Unpickler(const std::string& path, const std::string& archive, const std::map<std::string, ZipEntry>& entries,
            const uint8_t* data, int64_t size)
      : path_(path), archive_(archive), entries_(entries), data_(data), size_(size) {}

  Value* run();
  const std::vector<Storage>& storages() const { return storages_; }
  const std::vector<TensorRecord>& tensors() const { return tensors_; }

 private:
  std::string where() const { return path_ + ": data.pkl: byte " + std::to_string(op_pos_) + ": "; }
  Value* make(Value::Kind kind) {
    arena_.push_back(std::make_unique<Value>());
    arena_.back()->kind = kind;
    return arena_.back().get();
  }
  Value* make_int(int64_t n) {
    Value* v = make(Value::Kind::kInt);
    v->num = n;
    return v;
  }
  const uint8_t* take(uint64_t n) {
    OMNI_CHECK_INPUT(n <= static_cast<uint64_t>(size_ - pos_), where(), "truncated pickle: opcode 0x", std::hex,
                     static_cast<int>(data_[op_pos_]), std::dec, " needs ", n, " more bytes, ", size_ - pos_, " left");
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<int64_t>(n);
    return p;
  }
  uint64_t take_uint(int n) { return le(take(n), n); }
  std::string take_line() {
    const uint8_t* begin = data_ + pos_;
    const void* nl = std::memchr(begin, '\n', static_cast<size_t>(size_ - pos_));
    OMNI_CHECK_INPUT(nl != nullptr, where(), "truncated pickle: GLOBAL without a newline");
    const auto n = static_cast<const uint8_t*>(nl) - begin;
    pos_ += n + 1;
    return std::string(reinterpret_cast<const char*>(begin), static_cast<size_t>(n));
  }
  void push(Value* v) { stack_.push_back(v); }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Value* top() {
    OMNI_CHECK_INPUT(stack_.size() > floor(), where(), "corrupt pickle: stack underflow");
    return stack_.back();
  }
  Value* pop() {
    Value* v = top();
    stack_.pop_back();
    return v;
  }
  std::vector<Value*> pop_mark() {
    OMNI_CHECK_INPUT(!marks_.empty(), where(), "corrupt pickle: no MARK");
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  Value* target(Value::Kind kind) {
    Value* v = top();
    OMNI_CHECK_INPUT(v->kind == kind, where(), "corrupt pickle: expected a ",
                     kind == Value::Kind::kDict ? "dict" : "list", " below the items, found ", kind_name(v));
    return v;
  }
  void set_item(Value* dict, Value* key, Value* value);
  void global(const std::string& module, const std::string& name);
  void reduce();
  Value* rebuild_tensor(bool v3, const std::vector<Value*>& args);
  void persistent_id();
  void build();

  const std::string& path_;
  const std::string& archive_;
  const std::map<std::string, ZipEntry>& entries_;
  const uint8_t* data_;
  int64_t size_;
  int64_t pos_ = 0;
  int64_t op_pos_ = 0;
  std::vector<std::unique_ptr<Value>> arena_;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
  std::vector<Storage> storages_;
  std::vector<TensorRecord> tensors_;
};

void Unpickler::set_item(Value* dict, Value* key, Value* value) {
  if (key->kind == Value::Kind::kString) {
    auto it = dict->str_keys.find(key->text);
    if (it != dict->str_keys.end()) {
      dict->items[it->second + 1] = value;
      return;
    }
    dict->str_keys.emplace(std::string_view(key->text), dict->items.size());
  }
  dict->items.push_back(key);
  dict->items.push_back(value);
}

void Unpickler::global(const std::string& module, const std::string& name) {
  Value* v = make(Value::Kind::kGlobal);
  v->global = allowed_global(module, name, &v->dtype);
  OMNI_CHECK_INPUT(v->global != Global::kNone, where(), "GLOBAL ", printable(module), ".", printable(name),
                   " is not allowed in a state dict (", kAllowed, "); nothing from the file is run");
  v->text = module + "." + name;
  push(v);
}

void Unpickler::reduce() {
  Value* args = pop();
  Value* fn = pop();
  const bool callable =
      fn->kind == Value::Kind::kGlobal &&
      (fn->global == Global::kOrderedDict || fn->global == Global::kRebuildV2 || fn->global == Global::kRebuildV3);
  OMNI_CHECK_INPUT(callable, where(), "REDUCE calls ",
                   fn->kind == Value::Kind::kGlobal ? printable(fn->text) : std::string(kind_name(fn)),
                   ", expected collections.OrderedDict or torch._utils._rebuild_tensor_v2/_v3");
  OMNI_CHECK_INPUT(args->kind == Value::Kind::kTuple, where(), "REDUCE arguments are ", kind_name(args),
                   ", expected a tuple");
  if (fn->global != Global::kOrderedDict) {
    push(rebuild_tensor(fn->global == Global::kRebuildV3, args->items));
    return;
  }
  // torch.save writes OrderedDict() and SETITEMS. (Building from a list of pairs is not supported: a memoized
  // list could then be copied again and again, a quadratic cost for a hostile file.)
  OMNI_CHECK_INPUT(args->items.empty(), where(), "OrderedDict with ", args->items.size(),
                   " arguments, expected none (torch.save fills it with SETITEMS)");
  push(make(Value::Kind::kDict));
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata]);
// _v3 adds the dtype after backward_hooks. Only the record is kept; checks that name the tensor come later.
Value* Unpickler::rebuild_tensor(bool v3, const std::vector<Value*>& args) {
  const char* fn = v3 ? "_rebuild_tensor_v3" : "_rebuild_tensor_v2";
  const size_t n = v3 ? 7 : 6;
  OMNI_CHECK_INPUT(args.size() == n || args.size() == n + 1, where(), fn, " takes ", n, " or ", n + 1,
                   " arguments, found ", args.size());
  TensorRecord t;
  OMNI_CHECK_INPUT(args[0]->kind == Value::Kind::kStorage, where(), fn, ": argument 1 is ", kind_name(args[0]),
                   ", expected a storage (persistent id)");
  t.storage = args[0]->num;
  OMNI_CHECK_INPUT(args[1]->kind == Value::Kind::kInt, where(), fn, ": storage_offset is ", kind_name(args[1]),
                   ", expected an int");
  t.offset = args[1]->num;
  for (int k = 2; k <= 3; ++k) {
    OMNI_CHECK_INPUT(args[k]->kind == Value::Kind::kTuple && args[k]->items.size() <= 64, where(), fn, ": ",
                     k == 2 ? "size" : "stride", " is ", kind_name(args[k]), " of ", args[k]->items.size(),
                     " items, expected a tuple of at most 64 ints");
    for (const Value* d : args[k]->items) {
      OMNI_CHECK_INPUT(d->kind == Value::Kind::kInt, where(), fn, ": ", k == 2 ? "size" : "stride", " holds ",
                       kind_name(d), ", expected ints");
      (k == 2 ? t.size : t.stride).push_back(d->num);
    }
  }
  OMNI_CHECK_INPUT(t.size.size() == t.stride.size(), where(), fn, ": size has ", t.size.size(), " dims but stride ",
                   t.stride.size());
  OMNI_CHECK_INPUT(args[4]->kind == Value::Kind::kBool, where(), fn, ": requires_grad is ", kind_name(args[4]),
                   ", expected a bool");
  OMNI_CHECK_INPUT(args[5]->kind == Value::Kind::kDict && args[5]->items.empty(), where(), fn,
                   ": backward_hooks must be an empty OrderedDict, found ", kind_name(args[5]));
  const Storage& storage = storages_[static_cast<size_t>(t.storage)];
  if (v3) {
    OMNI_CHECK_INPUT(args[6]->kind == Value::Kind::kGlobal && args[6]->global == Global::kDType, where(), fn,
                     ": dtype is ", kind_name(args[6]), ", expected a torch dtype");
    t.dtype = args[6]->dtype;
  } else {
    OMNI_CHECK_INPUT(args[0]->global == Global::kTypedStorage, where(), fn, ": storage ", printable(storage.record),
                     " is untyped, expected a torch.<Type>Storage");
    t.dtype = args[0]->dtype;
  }
  if (args.size() == n + 1) {
    const Value* meta = args[n];
    OMNI_CHECK_INPUT(meta->kind == Value::Kind::kDict, where(), fn, ": metadata is ", kind_name(meta),
                     ", expected a dict");
    if (!meta->items.empty()) {
      t.flags = meta->items[0]->kind == Value::Kind::kString ? printable(meta->items[0]->text) : "?";
      if (meta->items.size() > 2) t.flags += ", ...";
    }
  }
  Value* v = make(Value::Kind::kTensor);
  v->num = static_cast<int64_t>(tensors_.size());
  tensors_.push_back(std::move(t));
  return v;
}

// torch.save's persistent id: ('storage', storage type, key, location, numel), the bytes being the record
// <archive>/data/<key>. numel counts elements of a typed storage, bytes of an untyped one.
void Unpickler::persistent_id() {
  const Value* pid = pop();
  const auto& it = pid->items;
  const bool ok = pid->kind == Value::Kind::kTuple && it.size() == 5 && it[0]->kind == Value::Kind::kString &&
                  it[0]->text == "storage" && it[1]->kind == Value::Kind::kGlobal &&
                  (it[1]->global == Global::kTypedStorage || it[1]->global == Global::kUntypedStorage) &&
                  it[2]->kind == Value::Kind::kString && it[3]->kind == Value::Kind::kString &&
                  it[2]->text.size() <= 256 && it[4]->kind == Value::Kind::kInt && it[4]->num >= 0;
  OMNI_CHECK_INPUT(ok, where(),
                   "persistent id is not ('storage', torch.<Type>Storage, key of at most 256 chars, location, numel)");
  const int64_t esize = it[1]->global == Global::kTypedStorage ? dtype_size(it[1]->dtype) : 1;
  const int64_t numel = it[4]->num;
  OMNI_CHECK_INPUT(numel <= kMax / esize, where(), "storage '", printable(it[2]->text), "': numel ", numel,
                   " is too large");
  Storage s;
  s.record = archive_ + "/data/" + it[2]->text;
  s.bytes = numel * esize;
  auto e = entries_.find(s.record);
  OMNI_CHECK_INPUT(e != entries_.end(), path_, ": record '", printable(s.record),
                   "' is missing from the zip (data.pkl names storage '", printable(it[2]->text), "')");
  OMNI_CHECK_INPUT(e->second.size >= s.bytes, path_, ": record '", printable(s.record), "' is ", e->second.size,
                   " bytes, shorter than its storage (", numel, " x ", printable(it[1]->text), " = ", s.bytes,
                   " bytes): truncated or corrupt file");
  s.begin = e->second.begin;
  Value* v = make(Value::Kind::kStorage);
  v->num = static_cast<int64_t>(storages_.size());
  v->global = it[1]->global;
  v->dtype = it[1]->dtype;
  storages_.push_back(std::move(s));
  push(v);
}

// BUILD sets an object's state. torch.save gives an OrderedDict its `_metadata` this way (ignored here); a
// tensor may get an empty state. Anything else would need code from the file.
void Unpickler::build() {
  const Value* state = pop();
  const Value* obj = top();
  const bool empty_state =
      state->kind == Value::Kind::kNone ||
      ((state->kind == Value::Kind::kDict || state->kind == Value::Kind::kTuple) && state->items.empty());
  const bool ok = (obj->kind == Value::Kind::kDict && (state->kind == Value::Kind::kDict || empty_state)) ||
                  (obj->kind == Value::Kind::kTensor && empty_state);
  OMNI_CHECK_INPUT(ok, where(), "BUILD of ", kind_name(obj), " with ", kind_name(state),
                   " state is not allowed in a state dict");
}

Value* Unpickler::run() {
  using K = Value::Kind;
  while (true) {
    OMNI_CHECK_INPUT(pos_ < size_, path_, ": data.pkl: truncated pickle: no STOP opcode in its ", size_, " bytes");
    op_pos_ = pos_;
    const uint8_t op = *take(1);
    switch (op) {
      case 0x80: {  // PROTO
        const uint64_t proto = take_uint(1);
        OMNI_CHECK_INPUT(proto <= 5, where(), "pickle protocol ", proto, ", expected 2 (torch.save) to 5");
        break;
      }
      case 0x95:  // FRAME: a read-ahead hint only
        take(8);
        break;
      case '.':  // STOP
        return pop();
      case '(':  // MARK
        marks_.push_back(stack_.size());
        break;
      case '}':
        push(make(K::kDict));
        break;
      case ']':
        push(make(K::kList));
        break;
      case ')':
        push(make(K::kTuple));
        break;
      case 't': {
        Value* t = make(K::kTuple);
        t->items = pop_mark();
        push(t);
        break;
      }
      case 0x85:  // TUPLE1, TUPLE2, TUPLE3
      case 0x86:
      case 0x87: {
        Value* t = make(K::kTuple);
        t->items.resize(op - 0x84);
        for (size_t i = t->items.size(); i-- > 0;) t->items[i] = pop();
        push(t);
        break;
      }
      case 'q':  // BINPUT, LONG_BINPUT, MEMOIZE
      case 'r':
      case 0x94: {
        const uint64_t key = op == 'q' ? take_uint(1) : op == 'r' ? take_uint(4) : memo_.size();
        memo_[key] = top();
        break;
      }
      case 'h':  // BINGET, LONG_BINGET
      case 'j': {
        const uint64_t key = take_uint(op == 'h' ? 1 : 4);
        auto it = memo_.find(key);
        OMNI_CHECK_INPUT(it != memo_.end(), where(), "corrupt pickle: memo entry ", key, " was never stored");
        push(it->second);
        break;
      }
      case 's': {  // SETITEM
        Value* value = pop();
        Value* key = pop();
        set_item(target(K::kDict), key, value);
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<Value*> items = pop_mark();
        OMNI_CHECK_INPUT(items.size() % 2 == 0, where(), "corrupt pickle: SETITEMS with an odd number of items");
        Value* dict = target(K::kDict);
        for (size_t i = 0; i < items.size(); i += 2) set_item(dict, items[i], items[i + 1]);
        break;
      }
      case 'a': {  // APPEND
        Value* value = pop();
        target(K::kList)->items.push_back(value);
        break;
      }
      case 'e': {  // APPENDS
        std::vector<Value*> items = pop_mark();
        Value* list = target(K::kList);
        list->items.insert(list->items.end(), items.begin(), items.end());
        break;
      }
      case 'J':  // BININT: signed 32-bit
        push(make_int(static_cast<int32_t>(static_cast<uint32_t>(take_uint(4)))));
        break;
      case 'K':
        push(make_int(static_cast<int64_t>(take_uint(1))));
        break;
      case 'M':
        push(make_int(static_cast<int64_t>(take_uint(2))));
        break;
      case 0x8a: {  // LONG1: n-byte little-endian two's complement
        const uint64_t n = take_uint(1);
        OMNI_CHECK_INPUT(n <= 8, where(), "LONG1 of ", n, " bytes does not fit in 64 bits");
        uint64_t v = n == 0 ? 0 : take_uint(static_cast<int>(n));
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        push(make_int(static_cast<int64_t>(v)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double, kept only as a placeholder value
        take(8);
        push(make(K::kFloat));
        break;
      }
      case 'N':
        push(make(K::kNone));
        break;
      case 0x88:  // NEWTRUE, NEWFALSE
      case 0x89: {
        Value* v = make(K::kBool);
        v->num = op == 0x88;
        push(v);
        break;
      }
      case 'X':    // BINUNICODE
      case 0x8c:   // SHORT_BINUNICODE
      case 0x8d:   // BINUNICODE8
      case 'T':    // BINSTRING
      case 'U':    // SHORT_BINSTRING
      case 'B':    // BINBYTES
      case 'C': {  // SHORT_BINBYTES
        const int len_bytes = (op == 0x8c || op == 'U' || op == 'C') ? 1 : op == 0x8d ? 8 : 4;
        const uint64_t n = take_uint(len_bytes);
        const uint8_t* p = take(n);  // bounded by what is left of data.pkl
        Value* v = make(op == 'B' || op == 'C' ? K::kBytes : K::kString);
        v->text.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
        push(v);
        break;
      }
      case 'c': {  // GLOBAL: checked here, before anything could use it
        const std::string module = take_line();
        const std::string name = take_line();
        global(module, name);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const Value* name = pop();
        const Value* module = pop();
        OMNI_CHECK_INPUT(module->kind == K::kString && name->kind == K::kString, where(), "STACK_GLOBAL of ",
                         kind_name(module), " and ", kind_name(name), ", expected two str");
        global(module->text, name->text);
        break;
      }
      case 'R':
        reduce();
        break;
      case 'Q':
        persistent_id();
        break;
      case 'b':
        build();
        break;
      default:
        OMNI_FAIL_INPUT(path_, ": data.pkl: opcode 0x", std::hex, static_cast<int>(op), std::dec, " at byte ", op_pos_,
                        " is not allowed in a state dict pickle (expected the opcodes torch.save writes)");
    }
  }
}

// Checks one named tensor against its storage and returns where its bytes are.
TensorInfo tensor_info(const std::string& path, const std::string& name, const TensorRecord& t, const Storage& s) {
  const std::string who = path + ": tensor '" + printable(name) + "': ";
  OMNI_CHECK_INPUT(t.flags.empty(), who, "has metadata {", t.flags,
                   "} (conjugate / negative bit), expected none: save tensor.resolve_conj().resolve_neg()");
  TensorInfo info;
  info.name = name;
  info.dtype = t.dtype;
  info.shape = t.size;
  const int64_t esize = dtype_size(t.dtype);
  int64_t numel = 1;
  bool has_zero = false;
  for (int64_t d : t.size) {
    OMNI_CHECK_INPUT(d >= 0, who, "negative dimension ", d);
    if (d == 0) has_zero = true;
    if (!has_zero) {
      OMNI_CHECK_INPUT(numel <= kMax / esize / d, who, "shape is too large");
      numel *= d;
    }
  }
  if (has_zero) numel = 0;
  // Row-major: each stride is the product of the later sizes; a dimension of size 1 may have any stride.
  int64_t expected = 1;
  for (size_t i = t.size.size(); i-- > 0 && numel > 0;) {
    OMNI_CHECK_INPUT(t.size[i] == 1 || t.stride[i] == expected, who, "non-contiguous tensor (dim ", i, " has stride ",
                     t.stride[i], ", expected ", expected, "); save tensor.contiguous()");
    expected *= t.size[i];
  }
  const int64_t storage_elems = s.bytes / esize;
  OMNI_CHECK_INPUT(numel == 0 || (t.offset >= 0 && t.offset <= storage_elems && numel <= storage_elems - t.offset), who,
                   "elements [", t.offset, ", +", numel, ") are outside its storage ", printable(s.record), " of ",
                   storage_elems, " ", dtype_name(t.dtype), " elements");
  info.data_begin = numel == 0 ? s.begin : s.begin + t.offset * esize;
  info.data_end = info.data_begin + numel * esize;
  return info;
}

// "dir/model.pth" -> "dir/model.zip.pth": where the conversion command suggests writing the re-saved file.
std::string converted_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + ".zip.pth";
  return path.substr(0, dot) + ".zip" + path.substr(dot);
}

}  // namespace

PthFile::PthFile(const std::string& path) : TensorFile(path) {
  try {
    map_file("a torch.save .pth file");
    const int64_t size = file_size();
    const uint8_t* bytes = map();
    OMNI_CHECK_INPUT(size >= 4, path, ": truncated or corrupt zip: the file is ", size,
                     " bytes, expected a torch.save zip archive");
    // torch.save before 1.6 (or with _use_new_zipfile_serialization=False) wrote a bare pickle stream.
    OMNI_CHECK_INPUT(bytes[0] != 0x80, path, ": legacy (pre-1.6, non-zip) torch.save file, expected a zip archive; ",
                     "re-save it once with: python -c \"import torch; torch.save(torch.load('", path,
                     "', weights_only=True), '", converted_name(path), "')\"");
    OMNI_CHECK_INPUT(le(bytes, 4) == kLocalHeaderSig, path, ": not a torch.save archive: starts with bytes ", std::hex,
                     static_cast<int>(bytes[0]), " ", static_cast<int>(bytes[1]), " ", static_cast<int>(bytes[2]), " ",
                     static_cast<int>(bytes[3]), std::dec, ", expected a zip (50 4b 03 04)");
    const std::map<std::string, ZipEntry> entries = read_zip(path, bytes, static_cast<uint64_t>(size));

    // <archive>/data.pkl: the archive folder is the saved file's stem, or "archive" for a stream.
    std::string archive;
    int found = 0;
    for (const auto& kv : entries) {
      const std::string& n = kv.first;
      const size_t slash = n.find('/');
      if (slash != std::string::npos && n.compare(slash, std::string::npos, "/data.pkl") == 0) {
        archive = n.substr(0, slash);
        ++found;
      }
    }
    OMNI_CHECK_INPUT(found == 1, path, ": found ", found, " <archive>/data.pkl records in ", entries.size(),
                     " zip records, expected exactly one (a torch.save archive)");
    auto order = entries.find(archive + "/byteorder");
    if (order != entries.end()) {
      const std::string value(reinterpret_cast<const char*>(bytes + order->second.begin),
                              static_cast<size_t>(std::min<int64_t>(order->second.size, 16)));
      OMNI_CHECK_INPUT(value == "little", path, ": record ", printable(archive), "/byteorder says '", printable(value),
                       "', expected 'little' (big-endian archives are not supported)");
    }

    const ZipEntry& pkl = entries.at(archive + "/data.pkl");
    Unpickler vm(path, archive, entries, bytes + pkl.begin, pkl.size);
    const Value* root = vm.run();
    OMNI_CHECK_INPUT(root->kind == Value::Kind::kDict, path, ": data.pkl holds ", kind_name(root),
                     ", expected a state dict (dict of name -> tensor)");
    // Training checkpoints often wrap the state dict: {"state_dict": {...}} and the like.
    if (root->items.size() == 2 && root->items[0]->kind == Value::Kind::kString &&
        root->items[1]->kind == Value::Kind::kDict) {
      const std::string& key = root->items[0]->text;
      if (key == "state_dict" || key == "model" || key == "module") root = root->items[1];
    }
    set_data_offset(0);
    for (size_t i = 0; i < root->items.size(); i += 2) {
      const Value* key = root->items[i];
      const Value* value = root->items[i + 1];
      OMNI_CHECK_INPUT(key->kind == Value::Kind::kString, path, ": data.pkl: a key of the state dict is ",
                       kind_name(key), ", expected str");
      OMNI_CHECK_INPUT(value->kind == Value::Kind::kTensor, path, ": entry '", printable(key->text), "' is ",
                       kind_name(value),
                       ", expected a tensor (a state dict maps names to tensors; a nested one is "
                       "read only as the single key state_dict, model or module)");
      const TensorRecord& t = vm.tensors()[static_cast<size_t>(value->num)];
      add_tensor(tensor_info(path, key->text, t, vm.storages()[static_cast<size_t>(t.storage)]));
    }
    // Views of one storage share bytes, so unlike safetensors overlapping ranges are fine here.
    finish_tensors();
  } catch (...) {
    release();
    throw;
  }
}

}  // namespace omni::io
