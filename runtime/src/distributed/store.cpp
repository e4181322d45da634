#include "dk/distributed/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "dk/util/error.h"

namespace dk::distributed {

Store::~Store() = default;

std::vector<uint8_t> Store::get(const std::string& key) {
  wait({key}, timeout_);
  std::vector<uint8_t> value;
  DK_CHECK(tryGet(key, value), describe(), ": key '", key, "' was deleted while being read");
  return value;
}

std::string Store::getString(const std::string& key) {
  std::vector<uint8_t> v = get(key);
  return std::string(v.begin(), v.end());
}

bool Store::check(const std::vector<std::string>& keys) {
  std::vector<uint8_t> ignored;
  for (const auto& key : keys) {
    if (!tryGet(key, ignored)) return false;
  }
  return true;
}

// Polls with a growing pause (0.1 ms to 10 ms): the stores answer one request at a time, and a
// rendezvous waits for a few keys once, so a server-side wait list would buy little.
void Store::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(100);
  std::vector<uint8_t> ignored;
  size_t next = 0;  // keys before it are known to be set
  while (true) {
    while (next < keys.size() && tryGet(keys[next], ignored)) ++next;
    if (next == keys.size()) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::ostringstream missing;
      for (size_t i = next, n = 0; i < keys.size(); ++i) {
        if (!tryGet(keys[i], ignored)) missing << (n++ ? ", " : "") << "'" << keys[i] << "'";
      }
      DK_ERROR(describe(), ": timed out after ", timeout.count(), " ms waiting for key(s) ", missing.str());
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
  }
}

// ---------------------------------------------------------------- TCPStore

namespace {

enum class Command : uint8_t { Set = 1, Get = 2, Add = 3, Delete = 4 };

// Whole reads and writes on a blocking socket; false when the peer closed or an error occurred.
bool readAll(int fd, void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    ssize_t got = ::recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool writeAll(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t put = ::send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

void appendBytes(std::vector<uint8_t>& out, const void* data, size_t n) {
  size_t at = out.size();
  out.resize(at + n);
  if (n) std::memcpy(out.data() + at, data, n);
}

void appendString(std::vector<uint8_t>& out, const void* data, size_t n) {
  uint32_t len = static_cast<uint32_t>(n);
  appendBytes(out, &len, sizeof len);
  appendBytes(out, data, n);
}

bool readString(int fd, std::string& out) {
  uint32_t len = 0;
  if (!readAll(fd, &len, sizeof len)) return false;
  out.resize(len);
  return len == 0 || readAll(fd, out.data(), len);
}

sockaddr_in resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  DK_CHECK(rc == 0 && found != nullptr, "TCPStore: cannot resolve host '", host, "': ", gai_strerror(rc));
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);
  addr.sin_port = htons(port);
  return addr;
}

}  // namespace

class TCPStore::Server {
 public:
  Server(const std::string& host, uint16_t port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    DK_CHECK(listen_fd_ >= 0, "TCPStore: socket() failed: ", std::strerror(errno));
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr = resolve(host, port);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 128) != 0) {
      int err = errno;
      ::close(listen_fd_);
      DK_ERROR("TCPStore: cannot listen on ", host, ":", port, ": ", std::strerror(err));
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    DK_CHECK(::pipe2(wake_, O_CLOEXEC) == 0, "TCPStore: pipe() failed: ", std::strerror(errno));
    thread_ = std::thread([this] { serve(); });
  }

  ~Server() {
    char byte = 0;
    (void)!::write(wake_[1], &byte, 1);
    thread_.join();
    for (int fd : clients_) ::close(fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  uint16_t port() const { return port_; }

  // Waits until every client has gone, at most `limit`: the other ranks may still be reading
  // (the monitoring keys of a collective that failed everywhere at once) when this rank is done.
  void waitForClients(std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (connected_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  void serve() {
    while (true) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (int fd : clients_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          clients_.push_back(fd);
          connected_.store(static_cast<int>(clients_.size()));
        }
      }
      std::vector<int> closed;
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        if (!answer(fds[i].fd)) closed.push_back(fds[i].fd);
      }
      for (int fd : closed) {
        ::close(fd);
        std::erase(clients_, fd);
      }
      connected_.store(static_cast<int>(clients_.size()));
    }
  }

  // One request from `fd`; false when the client went away (or sent nonsense).
  bool answer(int fd) {
    uint8_t command = 0;
    std::string key;
    if (!readAll(fd, &command, 1) || !readString(fd, key)) return false;
    std::vector<uint8_t> reply;
    switch (static_cast<Command>(command)) {
      case Command::Set: {
        std::string value;
        if (!readString(fd, value)) return false;
        data_[key].assign(value.begin(), value.end());
        reply.push_back(0);
        break;
      }
      case Command::Get: {
        auto it = data_.find(key);
        reply.push_back(it != data_.end() ? 1 : 0);
        if (it != data_.end()) appendString(reply, it->second.data(), it->second.size());
        break;
      }
      case Command::Add: {
        int64_t delta = 0;
        if (!readAll(fd, &delta, sizeof delta)) return false;
        int64_t value = 0;
        auto it = data_.find(key);
        if (it != data_.end()) value = std::stoll(std::string(it->second.begin(), it->second.end()));
        value += delta;
        std::string text = std::to_string(value);
        data_[key].assign(text.begin(), text.end());
        appendBytes(reply, &value, sizeof value);
        break;
      }
      case Command::Delete:
        reply.push_back(data_.erase(key) ? 1 : 0);
        break;
      default:
        return false;
    }
    return writeAll(fd, reply.data(), reply.size());
  }

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::vector<int> clients_;
  std::atomic<int> connected_{0};  // clients_.size(), for waitForClients
  std::map<std::string, std::vector<uint8_t>> data_;  // the server thread's only
  std::thread thread_;
};

class TCPStore::Connection {
 public:
  Connection(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) : where_(host + ":" + std::to_string(port)) {
    sockaddr_in addr = resolve(host, port);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::milliseconds(1);
    while (true) {
      fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      DK_CHECK(fd_ >= 0, "TCPStore: socket() failed: ", std::strerror(errno));
      if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) break;
      int err = errno;
      ::close(fd_);
      fd_ = -1;
      DK_CHECK(std::chrono::steady_clock::now() < deadline, "TCPStore: cannot connect to ", where_, " within ",
               timeout.count(), " ms (", std::strerror(err), "); is the process with the server (rank 0) running?");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(100));
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  // Sends `request` and reads the reply with `read` (under the lock: one request at a time).
  template <class Read>
  void roundTrip(const std::vector<uint8_t>& request, Read&& read) {
    std::lock_guard<std::mutex> lock(mutex_);
    DK_CHECK(writeAll(fd_, request.data(), request.size()) && read(fd_), "TCPStore(", where_,
             "): the connection to the server was lost (did the process with the server, rank 0, exit?)");
  }

 private:
  std::string where_;
  int fd_ = -1;
  std::mutex mutex_;
};

TCPStore::TCPStore(std::string host, uint16_t port, bool is_server, std::chrono::milliseconds timeout)
    : Store(timeout), host_(std::move(host)), port_(port) {
  if (is_server) {
    server_ = std::make_unique<Server>(host_, port_);
    port_ = server_->port();
  }
  connection_ = std::make_unique<Connection>(host_, port_, timeout);
}

TCPStore::~TCPStore() {
  connection_.reset();
  if (server_) server_->waitForClients(std::min<std::chrono::milliseconds>(timeout(), std::chrono::seconds(10)));
  server_.reset();
}

namespace {
std::vector<uint8_t> request(Command command, const std::string& key) {
  std::vector<uint8_t> out;
  out.reserve(1 + sizeof(uint32_t) + key.size());
  out.push_back(static_cast<uint8_t>(command));
  appendString(out, key.data(), key.size());
  return out;
}
}  // namespace

void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::vector<uint8_t> req = request(Command::Set, key);
  appendString(req, value.data(), value.size());
  connection_->roundTrip(req, [](int fd) {
    uint8_t ack = 1;
    return readAll(fd, &ack, 1) && ack == 0;
  });
}

bool TCPStore::tryGet(const std::string& key, std::vector<uint8_t>& value) {
  bool found = false;
  connection_->roundTrip(request(Command::Get, key), [&](int fd) {
    uint8_t flag = 0;
    if (!readAll(fd, &flag, 1)) return false;
    found = flag != 0;
    if (!found) return true;
    std::string text;
    if (!readString(fd, text)) return false;
    value.assign(text.begin(), text.end());
    return true;
  });
  return found;
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  std::vector<uint8_t> req = request(Command::Add, key);
  appendBytes(req, &delta, sizeof delta);
  int64_t value = 0;
  connection_->roundTrip(req, [&](int fd) { return readAll(fd, &value, sizeof value); });
  return value;
}

bool TCPStore::deleteKey(const std::string& key) {
  uint8_t erased = 0;
  connection_->roundTrip(request(Command::Delete, key), [&](int fd) { return readAll(fd, &erased, 1); });
  return erased != 0;
}

std::string TCPStore::describe() const { return "TCPStore(" + host_ + ":" + std::to_string(port_) + ")"; }

// ---------------------------------------------------------------- FileStore

namespace {
// Keys may hold any bytes; file names get them hex-encoded.
std::string hexName(const std::string& key) {
  static const char* digits = "0123456789abcdef";
  std::string out = "k";
  for (unsigned char c : key) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    DK_CHECK(fd_ >= 0, "FileStore: cannot open lock file '", path, "': ", std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};
}  // namespace

FileStore::FileStore(std::string folder, std::chrono::milliseconds timeout) : Store(timeout), folder_(std::move(folder)) {
  if (::mkdir(folder_.c_str(), 0755) != 0 && errno != EEXIST) {
    DK_ERROR("FileStore: cannot create folder '", folder_, "': ", std::strerror(errno));
  }
}

std::string FileStore::pathOf(const std::string& key) const { return folder_ + "/" + hexName(key); }

void FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  static std::atomic<uint64_t> counter{0};
  std::string final_path = pathOf(key);
  std::string temp = final_path + ".tmp" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()), static_cast<std::streamsize>(value.size()));
    DK_CHECK(out.good(), describe(), ": cannot write '", temp, "'");
  }
  DK_CHECK(::rename(temp.c_str(), final_path.c_str()) == 0, describe(), ": cannot rename '", temp, "': ", std::strerror(errno));
}

bool FileStore::tryGet(const std::string& key, std::vector<uint8_t>& value) {
  std::ifstream in(pathOf(key), std::ios::binary);
  if (!in) return false;
  value.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  FileLock lock(folder_ + "/lock");
  std::vector<uint8_t> old;
  int64_t value = tryGet(key, old) ? std::stoll(std::string(old.begin(), old.end())) : 0;
  value += delta;
  set(key, std::to_string(value));
  return value;
}

bool FileStore::deleteKey(const std::string& key) { return ::unlink(pathOf(key).c_str()) == 0; }

// ---------------------------------------------------------------- HashStore

void HashStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  data_[key] = value;
}

bool HashStore::tryGet(const std::string& key, std::vector<uint8_t>& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = data_.find(key);
  if (it == data_.end()) return false;
  value = it->second;
  return true;
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& v = data_[key];
  int64_t value = (v.empty() ? 0 : std::stoll(std::string(v.begin(), v.end()))) + delta;
  std::string text = std::to_string(value);
  v.assign(text.begin(), text.end());
  return value;
}

bool HashStore::deleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_.erase(key) != 0;
}

// ---------------------------------------------------------------- PrefixStore

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(store ? store->timeout() : kDefaultStoreTimeout), prefix_(std::move(prefix)), store_(std::move(store)) {
  DK_CHECK(store_ != nullptr, "PrefixStore: the underlying store is null");
}
void PrefixStore::set(const std::string& key, const std::vector<uint8_t>& value) { store_->set(prefix_ + key, value); }
bool PrefixStore::tryGet(const std::string& key, std::vector<uint8_t>& value) { return store_->tryGet(prefix_ + key, value); }
int64_t PrefixStore::add(const std::string& key, int64_t delta) { return store_->add(prefix_ + key, delta); }
bool PrefixStore::deleteKey(const std::string& key) { return store_->deleteKey(prefix_ + key); }
std::string PrefixStore::describe() const { return store_->describe() + " with prefix '" + prefix_ + "'"; }

}  // namespace dk::distributed
