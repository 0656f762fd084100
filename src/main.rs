fn main() -> std::process::ExitCode {
    oomlint::cli::main()
}
