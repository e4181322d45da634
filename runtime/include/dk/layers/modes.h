// dk/layers/modes.h: dispatch modes that ship with the library (Note [Dispatch modes]).
//   OpCounter      counts calls per operator overload
//   GraphRecorder  records each call with shapes, dtypes and where each input came from;
//                  prints the graph as text or Graphviz dot
//   RankLogger     writes one line per call (operator, input shapes, time) to a per-rank or
//                  per-thread log file, for diffing the logs of parallel workers
// Each forwards every call with op.callBoxed(stack), so modes below it and the kernels run.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dk/dispatch/dispatch_mode.h"

namespace dk {

class OpCounter : public DispatchMode {
 public:
  void dispatch(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) override;
  // Calls of one overload, by its full name ("dk::add.Tensor", "myops::count").
  int64_t count(const std::string& op_name) const;
  int64_t total() const;
  std::map<std::string, int64_t> counts() const;  // sorted by name
  void reset();
  std::string str() const;  // one "name: count" line per operator, sorted

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int64_t> counts_;
};

class GraphRecorder : public DispatchMode {
 public:
  struct Value {
    std::string producer;            // "%3" for output of node 3, "%in0" for an outside input, or a literal
    std::vector<int64_t> sizes;      // tensors only
    std::string dtype;               // tensors only, e.g. "Float"
    bool is_tensor = false;
    // Where the value comes from, for replaying the graph (dk::func::make_graph): output
    // `output` of node `node` (a node's outputs are its returns with each returned list's
    // elements counted one by one), or outside input `input`; else `constant`, the argument
    // itself; a list holding tensors has its `elements` instead.
    int node = -1;
    int output = 0;
    int input = -1;
    IValue constant;
    bool is_list = false;
    std::vector<Value> elements;
  };
  struct Node {
    int id;
    std::string op;                  // "dk::mm"
    std::optional<OperatorHandle> handle;  // the overload called
    std::vector<Value> inputs;
    std::vector<Value> outputs;
  };

  void dispatch(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) override;
  std::vector<Node> nodes() const;
  // One line per node: %2 = dk::mm(%0: Float[2, 3], %in1: Float[3, 4]) -> Float[2, 4]
  std::string str() const;
  std::string dot() const;  // digraph for Graphviz
  void clear();
  // Names `t` as the next outside input (%in0, %in1, ...) before it is used, so a graph's inputs
  // are numbered as its function's arguments; `t` must not have been seen yet.
  void addInput(const Tensor& t);
  // What the graph knows of `t`: the node output or outside input it is (a literal when it has
  // not been seen).
  Value valueOf(const Tensor& t);

 private:
  Value describe(const IValue& v);
  Value newInput(const IValue& v);
  mutable std::mutex mutex_;
  std::vector<Node> nodes_;
  // Note [GraphRecorder keeps outputs]: outputs are held so a tensor's identity cannot be
  // reused by a new tensor while recording; clear() releases them.
  std::vector<IValue> keep_alive_;
  std::unordered_map<const void*, Value> producer_of_;
  int next_input_ = 0;
};

class RankLogger : public DispatchMode {
 public:
  struct Options {
    bool timestamps = true;  // off: logs of equal runs are byte-identical
  };
  // Logs to `path`. Use one per rank (e.g. "ops.rank0.log") or per thread.
  explicit RankLogger(const std::string& path, Options options);
  explicit RankLogger(const std::string& path) : RankLogger(path, Options{}) {}
  // Logs to "<prefix>.rank<rank>.log".
  static std::shared_ptr<RankLogger> forRank(const std::string& prefix, int rank, Options options);
  static std::shared_ptr<RankLogger> forRank(const std::string& prefix, int rank) {
    return forRank(prefix, rank, Options{});
  }
  void dispatch(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) override;
  const std::string& path() const { return path_; }
  void flush();

  // Adds a note to the lines of the operators of one namespace, after the arguments:
  // "... [group=0 seq=3]" for c10d's collectives (dk::distributed sets it), which tools/dk-ranklogs
  // shows when it names the collective a rank diverged at. `first` is the index of the call's first
  // argument in `stack`; an empty note adds nothing. Replaces the namespace's annotator.
  using Annotator = std::function<std::string(const OperatorHandle& op, const Stack& stack, size_t first)>;
  static void setAnnotator(const std::string& op_namespace, Annotator annotator);

 private:
  std::mutex mutex_;
  std::string path_;
  Options options_;
  std::ofstream out_;
  uint64_t line_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// Records where every tensor made by an allocating operator was created (the operator, the
// call's sequence number on this tracker, its shape and dtype, and the innermost label of a
// Scope), and reports the ones still alive: the tool for "who holds this memory?".
// A tensor counts as allocated by an operator when it is an output whose storage none of the
// operator's inputs share (views and in-place results are not allocations).
class AllocationTracker : public DispatchMode, public std::enable_shared_from_this<AllocationTracker> {
 public:
  struct Allocation {
    std::string op;             // "dk::empty.memory_format"
    uint64_t call = 0;          // the tracker's call counter when it was made
    std::string label;          // innermost Scope label, "" when none
    std::vector<int64_t> sizes;
    std::string dtype;
    int64_t nbytes = 0;
  };
  // Labels allocations made in its lifetime on this thread (nests; innermost wins).
  class Scope {
   public:
    explicit Scope(std::string label);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };

  AllocationTracker();
  ~AllocationTracker() override;
  void dispatch(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) override;
  std::vector<Allocation> alive() const;  // in creation order
  int64_t aliveBytes() const;
  // One line per live tensor: "dk::zeros (call 3, in 'layer1'): Float[2, 3], 24 bytes".
  std::string report() const;
  void released(const TensorImpl* impl);  // called through Note [Tensor release observers]

 private:
  mutable std::mutex mutex_;
  uint64_t calls_ = 0;
  std::map<const TensorImpl*, std::pair<uint64_t, Allocation>> live_;  // impl -> (order, info)
  uint64_t order_ = 0;
};

// "[2, 3]" for a tensor, the value for anything else: used by the modes' printing.
std::string describeIValueShape(const IValue& v);

}  // namespace dk
