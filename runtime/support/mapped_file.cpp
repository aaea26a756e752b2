// POSIX mmap wrapper (see mapped_file.h for the contract).
#include "runtime/support/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace glm5rt {

MappedFile::~MappedFile() { (void)close(); }

StatusOr<std::unique_ptr<MappedFile>> MappedFile::openRead(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeStatus(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                      "%s: cannot open: %s", path.c_str(), std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = errno;
    ::close(fd);
    return makeStatus(StatusCode::kIoError, "%s: not a regular file%s%s", path.c_str(),
                      err ? ": " : "", err ? std::strerror(err) : "");
  }
  auto file = std::make_unique<MappedFile>();
  file->path_ = path;
  file->fd_ = fd;
  file->size_ = static_cast<uint64_t>(st.st_size);
  if (file->size_ > 0) {
    void *p = ::mmap(nullptr, file->size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      return makeStatus(StatusCode::kIoError, "%s: mmap of %llu bytes failed: %s", path.c_str(),
                        static_cast<unsigned long long>(file->size_), std::strerror(errno));
    file->data_ = static_cast<uint8_t *>(p);
  }
  return file;
}

StatusOr<std::unique_ptr<MappedFile>> MappedFile::createWrite(const std::string &path,
                                                              uint64_t size, bool reserve) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return makeStatus(StatusCode::kIoError, "%s: cannot create: %s", path.c_str(),
                      std::strerror(errno));
  auto file = std::make_unique<MappedFile>();
  file->path_ = path;
  file->fd_ = fd;
  file->size_ = size;
  file->writable_ = true;
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0)
    return makeStatus(StatusCode::kIoError, "%s: cannot size to %llu bytes: %s", path.c_str(),
                      static_cast<unsigned long long>(size), std::strerror(errno));
  if (reserve && size > 0) {
    int err = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
    if (err != 0)
      return makeStatus(StatusCode::kResourceExhausted,
                        "%s: cannot reserve %llu bytes on disk: %s", path.c_str(),
                        static_cast<unsigned long long>(size), std::strerror(err));
  }
  if (size > 0) {
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      return makeStatus(StatusCode::kIoError, "%s: mmap of %llu bytes failed: %s", path.c_str(),
                        static_cast<unsigned long long>(size), std::strerror(errno));
    file->data_ = static_cast<uint8_t *>(p);
  }
  return file;
}

std::unique_ptr<MappedFile> MappedFile::borrow(const std::string &name, const uint8_t *data,
                                              uint64_t size) {
  auto file = std::make_unique<MappedFile>();
  file->path_ = name;
  file->data_ = const_cast<uint8_t *>(data); // never written: writable_ stays false
  file->size_ = size;
  file->borrowed_ = true;
  return file;
}

Status MappedFile::close() {
  Status status;
  if (borrowed_) {
    data_ = nullptr;
    return status;
  }
  if (data_) {
    if (writable_ && ::msync(data_, size_, MS_SYNC) != 0)
      status = makeStatus(StatusCode::kIoError, "%s: writing %llu bytes failed: %s",
                          path_.c_str(), static_cast<unsigned long long>(size_),
                          std::strerror(errno));
    ::munmap(data_, size_);
    data_ = nullptr;
  }
  if (fd_ >= 0) {
    if (::close(fd_) != 0 && status.isOk())
      status = makeStatus(StatusCode::kIoError, "%s: close failed: %s", path_.c_str(),
                          std::strerror(errno));
    fd_ = -1;
  }
  return status;
}

} // namespace glm5rt
