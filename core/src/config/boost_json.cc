// Compiles Boost.JSON into the engine (its documented header-only mode), so
// libmulligan and the Python module carry no runtime dependency on
// libboost_json and keep its symbols hidden. Every other file includes
// <boost/json.hpp> only.
#include <boost/json/src.hpp>
