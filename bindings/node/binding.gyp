{
  "targets": [
    {
      "target_name": "mulligan_node",
      "sources": ["src/addon.c", "src/calls.c", "src/handles.c", "src/hedging.c", "src/options.c"],
      "include_dirs": ["<!@(pkg-config --variable=includedir mulligan)"],
      "libraries": [
        "<!@(pkg-config --libs mulligan)",
        "-Wl,-rpath,<!@(pkg-config --variable=libdir mulligan)"
      ],
      "cflags": ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
    }
  ]
}
