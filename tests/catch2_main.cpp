// The Catch2 main, compiled once into its own library.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
