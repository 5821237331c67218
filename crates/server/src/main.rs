fn main() {
    println!("sumi");
}
