// A deployment without Python: runs an AOTInductor package (a .pt2 made by
// torch._inductor.aoti_compile_and_package) whose graph calls structop ops.
//
//   deploy_runner [--ops-library LIB.so]... PACKAGE.pt2 INPUTS.pt OUTPUTS.pt
//
// 1. dlopen each ops library (its static initialisers register the ops with
//    the dispatcher, as torch.ops.load_library does in Python);
// 2. load the package with torch::inductor::AOTIModelPackageLoader: this is
//    where a package that calls an op nobody registered fails ("Could not
//    find schema for weights::op"), so the libraries come first;
// 3. run it once per entry of INPUTS.pt (torch.save of a list of lists of
//    tensors, one list per call) and write the outputs with
//    torch::pickle_save (a list of lists of tensors, read by torch.load).
//
// It links libtorch only (no libtorch_python, no libpython) and says so: it
// prints whether any Python library is mapped into the process after the run.
// Exit status: 0 on success, 1 when loading or running fails (the message on
// stderr; an op's error included), 2 on a usage error or an ops library that
// cannot be opened.
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <dlfcn.h>

#include <exception>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr char kUsage[] =
    "usage: deploy_runner [--ops-library LIB.so]... PACKAGE.pt2 INPUTS.pt OUTPUTS.pt\n";

/// The command line: the ops libraries to load, then the three paths.
struct Options {
  std::vector<std::string> ops_libraries;
  std::string package, inputs, outputs;
};

/// Options from argv, or false (with a message on stderr) for a usage error.
bool parse_options(int argc, char** argv, Options& options) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ops-library") {
      if (i + 1 == argc) {
        std::cerr << "deploy_runner: --ops-library needs a path\n" << kUsage;
        return false;
      }
      options.ops_libraries.push_back(argv[++i]);
    } else if (arg.rfind("--", 0) == 0) {
      std::cerr << "deploy_runner: unknown option " << arg << "\n" << kUsage;
      return false;
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 3) {
    std::cerr << "deploy_runner: expected 3 paths, got " << positional.size() << "\n" << kUsage;
    return false;
  }
  options.package = positional[0];
  options.inputs = positional[1];
  options.outputs = positional[2];
  return true;
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK(in, "cannot read ", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<char>& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  TORCH_CHECK(out, "cannot write ", path);
}

/// "[7, 4]"
std::string shape(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

/// Whether a Python library (libpython, libtorch_python) is mapped into this process.
bool python_is_loaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libpython") != std::string::npos ||
        line.find("libtorch_python") != std::string::npos) {
      return true;
    }
  }
  return false;
}

/// Loads the package, runs it on every input list and writes the outputs.
void run(const Options& options) {
  torch::inductor::AOTIModelPackageLoader loader(options.package);
  const c10::IValue inputs = torch::jit::pickle_load(read_file(options.inputs));
  TORCH_CHECK(inputs.isList(), options.inputs, ": expected a list of lists of tensors");
  c10::List<c10::List<at::Tensor>> results;
  int call = 0;
  for (const c10::IValue& entry : inputs.toListRef()) {
    std::vector<at::Tensor> args;
    for (const c10::IValue& arg : entry.toListRef()) args.push_back(arg.toTensor());
    const std::vector<at::Tensor> outputs = loader.run(args);
    ++call;
    for (size_t i = 0; i < outputs.size(); ++i) {
      // torch 2.6's AOTInductor logs an op's exception ("Exception in
      // aoti_torch: ...") and returns no tensor instead of throwing it.
      TORCH_CHECK(
          outputs[i].defined(),
          "call ",
          call,
          ": output ",
          i,
          " is undefined (an op failed; its error is logged above)");
    }
    std::cout << "call " << call << ": inputs";
    for (const at::Tensor& arg : args) std::cout << " " << shape(arg);
    std::cout << " -> outputs";
    c10::List<at::Tensor> row;
    for (const at::Tensor& out : outputs) {
      std::cout << " " << shape(out);
      row.push_back(out);
    }
    std::cout << "\n";
    results.push_back(row);
  }
  write_file(options.outputs, torch::jit::pickle_save(results));
  std::cout << "python in process: " << (python_is_loaded() ? "yes" : "no") << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, options)) return 2;
  for (const std::string& path : options.ops_libraries) {
    // RTLD_NOW: an unresolved symbol fails here, not in the middle of a call.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
      std::cerr << "deploy_runner: cannot load ops library " << path << ": " << dlerror() << "\n";
      return 2;
    }
    std::cout << "loaded ops library " << path << "\n";
  }
  std::string message;
  try {
    run(options);
    return 0;
  } catch (const c10::Error& error) {
    message = error.what_without_backtrace();  // what() ends with a C++ backtrace
  } catch (const std::exception& error) {
    // AOTInductor rethrows an op's c10::Error as a std::runtime_error with
    // the whole what(), C++ backtrace included.
    message = error.what();
    message = message.substr(0, message.find("\nException raised from"));
  }
  std::cerr << "deploy_runner: " << options.package << ": " << message << "\n";
  if (message.find("Could not find schema for") != std::string::npos) {
    std::cerr << "deploy_runner: hint: the package calls an op that no loaded library registers; "
                 "load the library that defines it first (--ops-library LIB.so)\n";
  }
  return 1;
}
