// dk/distributed/store.h: the key-value stores ranks meet through (rendezvous, and the
// monitoring keys that name the ranks a timed-out collective waited for).
//
//   TCPStore     a server in one process (rank 0), a client in every process: what
//                MASTER_ADDR / MASTER_PORT name (init_process_group's default).
//   FileStore    a folder on a file system every rank sees (one file per key).
//   PrefixStore  a view of another store with every key prefixed ("group1/").
//
// Values are bytes. get() waits for the key up to the store's timeout, then throws a dk::Error
// naming the key and the store.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dk::distributed {

inline constexpr std::chrono::milliseconds kDefaultStoreTimeout = std::chrono::minutes(5);

class Store {
 public:
  explicit Store(std::chrono::milliseconds timeout = kDefaultStoreTimeout) : timeout_(timeout) {}
  virtual ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  // The value of `key`, waiting for it up to timeout().
  std::vector<uint8_t> get(const std::string& key);
  // The value of `key` when it is set now; false (and value untouched) otherwise. No waiting.
  virtual bool tryGet(const std::string& key, std::vector<uint8_t>& value) = 0;
  // Adds `delta` to the integer stored at `key` (0 when absent) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // True when every key is set now.
  bool check(const std::vector<std::string>& keys);
  // Waits until every key is set; throws after `timeout`, naming the keys still missing.
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  virtual bool deleteKey(const std::string& key) = 0;

  void set(const std::string& key, const std::string& value) { set(key, std::vector<uint8_t>(value.begin(), value.end())); }
  std::string getString(const std::string& key);

  std::chrono::milliseconds timeout() const { return timeout_; }
  void setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  // "TCPStore(127.0.0.1:29500)": how errors name the store.
  virtual std::string describe() const = 0;

 private:
  std::chrono::milliseconds timeout_;
};

// The server holds the keys in memory and answers one request at a time on its own thread; every
// TCPStore (the server's own too) talks to it over one connection. The server's destructor waits
// (up to the timeout, at most 10 s) for the other processes to disconnect, so a rank that finishes
// first does not take the store away from ranks still reading it.
class TCPStore : public Store {
 public:
  // is_server: listen on `port` of `host` (port 0 picks a free one: see port()). Every store
  // connects, retrying until `timeout` when the server is not up yet.
  TCPStore(std::string host, uint16_t port, bool is_server,
           std::chrono::milliseconds timeout = kDefaultStoreTimeout);
  ~TCPStore() override;

  using Store::set;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  bool tryGet(const std::string& key, std::vector<uint8_t>& value) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool deleteKey(const std::string& key) override;
  std::string describe() const override;
  uint16_t port() const { return port_; }

 private:
  class Server;
  class Connection;
  std::string host_;
  uint16_t port_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Connection> connection_;
};

// One file per key in `folder` (created when missing); writes are atomic (write, then rename).
// add() takes a lock file with flock(2).
class FileStore : public Store {
 public:
  explicit FileStore(std::string folder, std::chrono::milliseconds timeout = kDefaultStoreTimeout);
  using Store::set;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  bool tryGet(const std::string& key, std::vector<uint8_t>& value) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool deleteKey(const std::string& key) override;
  std::string describe() const override { return "FileStore(" + folder_ + ")"; }

 private:
  std::string pathOf(const std::string& key) const;
  std::string folder_;
};

// In this process's memory: for one process (tests), or an MPI job without a TCPStore.
class HashStore : public Store {
 public:
  explicit HashStore(std::chrono::milliseconds timeout = kDefaultStoreTimeout) : Store(timeout) {}
  using Store::set;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  bool tryGet(const std::string& key, std::vector<uint8_t>& value) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool deleteKey(const std::string& key) override;
  std::string describe() const override { return "HashStore"; }

 private:
  std::mutex mutex_;
  std::map<std::string, std::vector<uint8_t>> data_;
};

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);
  using Store::set;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  bool tryGet(const std::string& key, std::vector<uint8_t>& value) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool deleteKey(const std::string& key) override;
  std::string describe() const override;
  const std::shared_ptr<Store>& underlying() const { return store_; }

 private:
  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace dk::distributed
